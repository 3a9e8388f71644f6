"""The LoCoMo case builder on a small synthetic conversation (and on real data if present)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from meclear_bench import (
    BenchCase,
    LocomoBuild,
    LocomoDataError,
    build_locomo_cases,
    parse_case_lines,
    verify_case,
)

FACTS_1 = [
    ["Ana went hiking in the Alps with her cousin.", "D1:1"],
    ["Ana adopted a cat named Miso from the shelter.", "D1:3"],
    ["Ana bakes bread every Sunday morning.", "D1:5"],
    ["Ana moved to Lisbon from Porto last year.", "D1:7"],
]
FACTS_2 = [
    ["Ben ran the city marathon and finished in four hours.", "D2:2"],
    ["Ben visited Madrid for a football match.", "D2:4"],
    ["Ben plays the guitar in a small band.", "D2:6"],
    ["Ben bought a red bicycle for commuting.", "D2:8"],
    ["Ben has two sisters who live abroad.", "D2:10"],
]
QA = [
    {
        "question": "When did Ana go hiking in the Alps?",
        "answer": "7 May 2023",
        "evidence": ["D1:1"],
        "category": 2,
    },
    {
        "question": "When did Ben run the city marathon?",
        "answer": "20 June 2023",
        "evidence": ["D2:2"],
        "category": 2,
    },
    {
        "question": "Where did Ben visit for a football match?",
        "answer": "Madrid",
        "evidence": ["D2:4"],
        "category": 4,
    },
    {
        "question": "Where did Ana move from?",
        "answer": "Porto",
        "evidence": ["D1:7"],
        "category": 4,
    },
    {
        "question": "What instrument does Ben play?",
        "answer": "guitar",
        "evidence": ["D2:6"],
        "category": 1,
    },
    {
        "question": "What is the name of Ana's cat?",
        "answer": "Miso",
        "evidence": ["D9:9"],
        "category": 1,
    },  # evidence points at no memory
    {
        "question": "What did Ana say about sharks?",
        "evidence": ["D1:1"],
        "category": 5,
        "adversarial_answer": "scary",
    },
]


def _flat(n: int) -> dict:
    """One conversation in the per-conversation (flattened) layout."""
    return {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "hi"}],
        "session_2_date_time": "10:00 am on 21 June, 2023",
        "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "hey"}],
        "session_3_date_time": "9:00 am on 2 August, 2023",
        "session_3": [{"speaker": "Ana", "dia_id": "D3:1", "text": "yo"}],
        "session_4_date_time": "9:00 am on 9 September, 2023",  # no session_4: not held
        "session_1_observation": {"Ana": FACTS_1, "Ben": []},
        "session_2_observation": {"Ana": [], "Ben": FACTS_2},
        "qa": QA[: n or None],
    }


@pytest.fixture
def locomo_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "1.json").write_text(json.dumps(_flat(0)), encoding="utf-8")
    (folder / "2.json").write_text(json.dumps(_flat(0)), encoding="utf-8")
    return folder


def _build(path: Path, **kw) -> LocomoBuild:
    return build_locomo_cases(path, **{"structures": ("direct", "redundant", "joint"), **kw})


def test_builds_verified_cases_with_the_structures_signatures(locomo_dir: Path) -> None:
    build = _build(locomo_dir)
    assert build.cases
    for case in build.cases:
        assert verify_case(case).ok
        assert len(case.memories) == 5
        expected = {"direct": 1, "redundant": 2, "joint": 2}[case.structure]
        assert len(case.targets) == expected
        assert case.fault_type in {"explicit_conflict", "precise_factual", "precise_temporal"}
        w = case.world
        gold = [m.id for m in case.memories if m.id in w.claims and m.id not in case.targets]
        assert gold and all(w.claims[g].answer == case.reference for g in gold)
        assert all(w.claims[t].answer != case.reference for t in case.targets)
        rest = [m.id for m in case.memories if m.id not in case.targets]
        assert w.expected_score(rest, case.reference) == 1.0
        assert w.expected_score([m.id for m in case.memories], case.reference) == 0.0
        if case.structure == "redundant":
            assert all(w.expected_score([*rest, t], case.reference) == 0.0 for t in case.targets)
        if case.structure == "joint":
            assert all(w.expected_score([*rest, t], case.reference) == 1.0 for t in case.targets)
        ranks = [m.metadata["retrieval_rank"] for m in case.memories]
        assert ranks == [1, 2, 3, 4, 5]
    temporal = [c for c in build.cases if c.fault_type == "precise_temporal"]
    for case in temporal:  # wrong dates are other dates of the conversation
        wrong = {case.world.claims[t].answer for t in case.targets}
        assert wrong <= {
            "8 May 2023",
            "21 June 2023",
            "2 August 2023",
            "7 May 2023",
            "20 June 2023",
        }


def test_funnel_is_consistent(locomo_dir: Path) -> None:
    build = _build(locomo_dir)
    f = build.funnel
    json.dumps(f)  # JSON-able
    assert f["conversations"] == 2
    assert f["qa_total"] == 2 * len(QA)
    assert f["qa_categories_1_4"] == 2 * 6
    assert f["dropped_queries"]["no_gold_memory"] == 2
    assert (
        f["qa_categories_1_4"]
        == f["queries_with_gold_memories"] + f["dropped_queries"]["no_gold_memory"]
    )
    lost = sum(v for k, v in f["dropped_queries"].items() if k != "no_gold_memory")
    assert f["queries_with_gold_memories"] == f["clean_queries"] + lost - f["dropped_queries"].get(
        "beyond_max_queries", 0
    )
    for structure in ("direct", "redundant", "joint"):
        dropped = sum(reasons.get(structure, 0) for reasons in f["dropped"].values())
        assert f["candidates"][structure] == f["clean_queries_used"]
        assert f["candidates"][structure] == f["verified"][structure]["all"] + dropped
    assert f["verified"]["all"]["all"] == len(build.cases) == f["cases"]
    assert f["fault_records"] == sum(len(c.targets) for c in build.cases)
    by_cell = Counter((c.structure, c.fault_type) for c in build.cases)
    for (structure, fault), n in by_cell.items():
        assert f["verified"][structure][fault] == n
    assert sum(v["cases"] for v in f["per_conversation"].values()) == len(build.cases)


def test_deterministic_and_seed_dependent(locomo_dir: Path) -> None:
    a, b = _build(locomo_dir, seed=3), _build(locomo_dir, seed=3)
    assert [c.model_dump() for c in a.cases] == [c.model_dump() for c in b.cases]
    assert a.funnel == b.funnel
    c = _build(locomo_dir, seed=4)
    assert [x.model_dump() for x in c.cases] != [x.model_dump() for x in a.cases]


def test_cases_do_not_depend_on_the_other_conversations(locomo_dir: Path) -> None:
    both = _build(locomo_dir)
    one = _build(locomo_dir, conversations=["2"])
    assert one.cases == [c for c in both.cases if c.cluster == "locomo-2"]
    assert _build(locomo_dir, conversations=["conv-2"]).cases == one.cases
    with pytest.raises(ValueError, match="unknown LoCoMo conversation"):
        _build(locomo_dir, conversations=["99"])


def test_max_queries_and_clean_controls(locomo_dir: Path) -> None:
    capped = _build(locomo_dir, max_queries_per_conversation=1, structures=("direct", "clean"))
    assert capped.funnel["clean_queries_used"] == 2
    assert len({c.query_id for c in capped.cases}) <= 2
    clean = [c for c in capped.cases if c.structure == "clean"]
    assert len(clean) == 2 and all(not c.targets and verify_case(c).ok for c in clean)


def test_single_file_release_layout(tmp_path: Path, locomo_dir: Path) -> None:
    nested = []
    for cid in ("1", "2"):
        flat = _flat(0)
        conversation = {
            k: v
            for k, v in flat.items()
            if k.startswith(("speaker", "session")) and not k.endswith("observation")
        }
        observation = {k: v for k, v in flat.items() if k.endswith("observation")}
        nested.append(
            {
                "sample_id": f"conv-{cid}",
                "conversation": conversation,
                "observation": observation,
                "qa": flat["qa"],
            }
        )
    file = tmp_path / "locomo10.json"
    file.write_text(json.dumps(nested), encoding="utf-8")
    from_file = _build(file)
    assert from_file.cases == _build(locomo_dir).cases
    holder = tmp_path / "holder"
    holder.mkdir()
    (holder / "locomo10.json").write_text(file.read_text(encoding="utf-8"), encoding="utf-8")
    assert _build(holder).cases == from_file.cases


def test_missing_or_invalid_data_says_where_to_get_locomo(tmp_path: Path) -> None:
    with pytest.raises(LocomoDataError, match="snap-research/locomo"):
        build_locomo_cases(tmp_path / "nowhere")
    (tmp_path / "x.json").write_text("{}", encoding="utf-8")
    with pytest.raises(LocomoDataError, match="snap-research/locomo"):
        build_locomo_cases(tmp_path)
    (tmp_path / "x.json").write_text("not json", encoding="utf-8")
    with pytest.raises(LocomoDataError, match="snap-research/locomo"):
        build_locomo_cases(tmp_path)


def test_cases_round_trip_through_the_jsonl_contract(locomo_dir: Path) -> None:
    build = _build(locomo_dir)
    lines = [c.model_dump_json() for c in build.cases]
    parsed = parse_case_lines(lines)
    assert parsed.ok and parsed.cases == build.cases
    assert all(isinstance(c, BenchCase) for c in parsed.cases)


REAL = [
    p
    for p in (
        Path("/work/shared/data/locomo10"),
        Path(__file__).parents[4] / "shared/data/locomo10",
    )
    if p.is_dir()
]


@pytest.mark.skipif(not REAL, reason="LoCoMo data not present")
def test_real_locomo_conversation() -> None:
    build = build_locomo_cases(REAL[0], conversations=["26"], max_queries_per_conversation=40)
    f = build.funnel
    assert f["conversations"] == 1 and f["qa_categories_1_4"] == 152
    assert f["clean_queries_used"] == 40
    assert len(build.cases) >= 60
    assert {c.structure for c in build.cases} == {"direct", "redundant", "joint", "clean"}
    assert sum(c.structure == "clean" for c in build.cases) == 40
    # some proposals fail causal verification: the funnel says why
    dropped = set(f["dropped"])
    assert dropped & {"direct_not_failing", "redundant_fault_alone_harmless"}
    assert dropped & {"joint_fault_alone_harmful", "joint_pair_harmless"}
    for case in build.cases:
        assert verify_case(case).ok
        assert case.cluster == "locomo-26"
        assert case.world.deterministic and case.world.abstain_weight is not None
        background = [m.id for m in case.memories if m.id not in case.targets]
        gold = [mid for mid in background if mid in case.world.claims]
        assert all(case.world.claims[mid].answer == case.reference for mid in gold)


@pytest.mark.skipif(not REAL, reason="LoCoMo data not present")
def test_fault_records_are_dated_by_their_type() -> None:
    """A precise fault is a stale version (dated before the gold), an explicit conflict a
    later wrong correction (dated after it), whenever the conversation has such a session."""
    build = build_locomo_cases(REAL[0], conversations=["26"], max_queries_per_conversation=40)
    sessions = sorted({m.metadata["session"] for c in build.cases for m in c.memories})
    checked = Counter()
    for case in build.cases:
        if case.structure == "clean":
            continue
        gold = [
            m.metadata["session"]
            for m in case.memories
            if m.id in case.world.claims
            and case.world.claims[m.id].answer == case.reference
            and case.world.claims[m.id].weight >= 0.8  # gold (weak background support < 0.4)
        ]
        assert gold
        for m in case.memories:
            if m.id not in case.targets:
                continue
            assert m.metadata["date"] is not None
            if case.fault_type == "explicit_conflict" and max(gold) < sessions[-1]:
                assert m.metadata["session"] > max(gold), (case.case_id, m.metadata, gold)
                checked["later"] += 1
            elif case.fault_type != "explicit_conflict" and min(gold) > sessions[0]:
                assert m.metadata["session"] < min(gold), (case.case_id, m.metadata, gold)
                checked["earlier"] += 1
    assert checked["later"] and checked["earlier"]
