"""Heavy-redundancy cases (bench.redundancy), their runner and ``meclear bench-redundancy``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meclear_bench.redundancy import (
    build_redundancy_cases,
    copy_texts,
    reader_answer,
    verify_redundancy_case,
)
from meclear_bench.redundancy_run import run_redundancy, summarize
from meclear_integrations.cli import main

FILLER = [
    "Ana bakes bread every Sunday morning.",
    "Ben plays the guitar in a small band.",
    "Ana adopted a cat named Miso from the shelter.",
    "Ben bought a red bicycle for commuting.",
    "Ana keeps a journal of the books she reads.",
    "Ben has two sisters who live abroad.",
    "Ana grows tomatoes on her balcony.",
    "Ben watches football with his neighbours.",
    "Ana painted a sunset over the lake.",
    "Ben started a course on photography.",
    "Ana visited her grandmother in the countryside.",
    "Ben fixed the roof of his garage.",
    "Ana volunteers at the library on weekends.",
    "Ben learned to cook a spicy curry.",
    "Ana ran a charity race with her colleagues.",
    "Ben wrote a short story about the sea.",
    "Ana joined a choir in her town.",
    "Ben went camping by the river with friends.",
    "Ana bought new running shoes.",
    "Ben repaired an old radio.",
    "Ana watched a play at the theatre.",
    "Ben adopted a puppy called Rex.",
]
EVENTS = [
    ("Ana went hiking in the Alps with her cousin.", "When did Ana go hiking in the Alps?"),
    ("Ben ran the city marathon in four hours.", "When did Ben run the city marathon?"),
    ("Ana moved to Lisbon from Porto.", "When did Ana move to Lisbon?"),
    ("Ben visited Madrid for a football match.", "When did Ben visit Madrid?"),
]
DATES = ["8 May, 2023", "21 June, 2023", "2 August, 2023", "9 September, 2023"]


def _conversation() -> dict:
    facts_a = [[t, f"D1:{i}"] for i, t in enumerate([*FILLER[::2], EVENTS[0][0], EVENTS[2][0]])]
    facts_b = [[t, f"D2:{i}"] for i, t in enumerate([*FILLER[1::2], EVENTS[1][0], EVENTS[3][0]])]
    qa = [
        {"question": q, "answer": d.replace(",", ""), "evidence": [ev], "category": 2}
        for (_, q), d, ev in zip(
            EVENTS,
            ["7 May 2023", "20 June 2023", "1 August 2023", "8 September 2023"],
            [
                f"D1:{len(FILLER[::2])}",
                f"D2:{len(FILLER[1::2])}",
                f"D1:{len(FILLER[::2]) + 1}",
                f"D2:{len(FILLER[1::2]) + 1}",
            ],
            strict=True,
        )
    ]
    conv = {"speaker_a": "Ana", "speaker_b": "Ben", "qa": qa}
    for n, date in enumerate(DATES, 1):
        conv[f"session_{n}_date_time"] = f"1:00 pm on {date}"
        conv[f"session_{n}"] = [{"speaker": "Ana", "dia_id": f"D{n}:0", "text": "hi"}]
    conv["session_1_observation"] = {"Ana": facts_a, "Ben": []}
    conv["session_2_observation"] = {"Ana": [], "Ben": facts_b}
    return conv


@pytest.fixture
def locomo_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "1.json").write_text(json.dumps(_conversation()), encoding="utf-8")
    return folder


def test_copy_texts_are_distinct_and_hedged_as_asked() -> None:
    texts = copy_texts(
        "When did Ana go hiking?",
        "3 March 2023",
        speaker="Ana",
        other="Ben",
        hedged=[False, True, False, True, True, True, True, True, False, False],
    )
    assert len(set(texts)) == 10 and all("3 March 2023" in t for t in texts)
    hedges = ("not certain", "vague memory", "Perhaps", "maybe", "suspected")
    assert any(h in texts[1] for h in hedges) and not any(h in texts[0] for h in hedges)


def test_builds_verified_heavy_cases_and_controls(locomo_dir: Path) -> None:
    build = build_redundancy_cases(locomo_dir, mode="simulated")
    heavy = [c for c in build.cases if c.structure == "heavy"]
    assert heavy and {c.structure for c in build.cases} == {
        "heavy",
        "clean",
        "double_gold",
        "unexplained",
    }
    for case in heavy:
        assert 3 <= len(case.targets) <= 10 and 10 <= len(case.memories) <= 20
        assert verify_redundancy_case(case, "simulated") is None
        gold = case.world.claims[f"{case.query_id}-gold"].weight
        weights = [case.world.claims[t].weight for t in case.targets]
        assert any(w >= gold for w in weights)  # a copy that flips the answer alone
        read = reader_answer("simulated", case)
        assert read([m.id for m in case.memories]) != case.reference
    assert build.funnel["questions"] == 4


def test_runner_meets_the_targets_on_the_simulated_set(locomo_dir: Path) -> None:
    build = build_redundancy_cases(locomo_dir, mode="simulated")
    summary = summarize(run_redundancy(build.cases, "simulated"))
    complete, minimal, loo = summary["meclear-complete"], summary["meclear-minimal"], summary["loo"]
    assert complete["carrier_recall"] >= 0.95 and complete["carrier_precision"] >= 0.95
    assert complete["all_copies_deleted"] == 1.0 and complete["max_background_heavy"] == 0
    assert complete["recovered_heavy"] >= minimal["recovered_heavy"]
    assert minimal["deletion_recall"] <= complete["deletion_recall"]
    assert complete["calls_unexplained"] <= 2 * loo["calls_unexplained"]
    # the default's unexplained-failure probe (issue 37 item 5): at most 1.5x leave-one-out
    assert summary["meclear"]["calls_unexplained"] <= 1.5 * loo["calls_unexplained"]
    assert complete["carrier_calls_per_remaining"] <= 1.0


def test_the_text_reader_builds_and_runs(locomo_dir: Path) -> None:
    build = build_redundancy_cases(locomo_dir, mode="text")
    assert build.funnel["mode"] == "text" and build.cases
    records = run_redundancy(build.cases, "text", ("meclear-complete", "loo"))
    assert len(records) == len(build.cases)


def test_cli_writes_the_table(locomo_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    code = main(
        [
            "bench-redundancy",
            "--locomo",
            str(locomo_dir),
            "--out",
            str(out),
            "--no-progress",
            "--methods",
            "meclear-complete,loo",
        ]
    )
    assert code == 0
    table = (out / "redundancy.md").read_text(encoding="utf-8")
    assert "SIMULATED" in table and "| meclear-complete |" in table and "| loo |" in table
    payload = json.loads((out / "redundancy.json").read_text(encoding="utf-8"))
    assert set(payload["summary"]) == {"meclear-complete", "loo"}
    assert (
        main(
            [
                "bench-redundancy",
                "--locomo",
                str(locomo_dir),
                "--out",
                str(out),
                "--methods",
                "nope",
            ]
        )
        == 2
    )
