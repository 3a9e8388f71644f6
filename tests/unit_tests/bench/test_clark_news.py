"""The CLARK-News builder: labels from the data's validity windows, verified cases."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from meclear_bench import BenchSettings, run_benchmark
from meclear_bench.cases import load_cases
from meclear_bench.clark_news import (
    build_clark_cases,
    clark_split,
    load_clark_questions,
    main,
)
from meclear_bench.clark_report import diagnosis, fault_table, judge_blind, kind_of, markdown
from meclear_integrations.core.errors import ConfigurationError

COLUMNS = ["Question", "Answer", "Answer choices", "Start timestamp", "End timestamp"]
ROWS = [
    (
        "Who is the chairperson of Alpha Party?",
        "Ann Smith",
        "2015-01-01T00:00:00Z",
        "2020-03-01T00:00:00Z",
    ),
    ("Who is the chairperson of Alpha Party?", "Bob Jones", "2020-03-01T00:00:00Z", ""),
    ("Does Ann Smith chair Alpha Party?", "yes", "2015-01-01T00:00:00Z", "2020-03-01T00:00:00Z"),
    ("Who is the CEO of Beta Corp?", "Carl White", "2010-01-01T00:00:00Z", "2019-06-01T00:00:00Z"),
    ("Who is the CEO of Beta Corp?", "Dana Green", "2019-06-01T00:00:00Z", "2021-01-01T00:00:00Z"),
    ("Who is the CEO of Beta Corp?", "Eve Black", "2021-01-01T00:00:00Z", ""),
    ("Who is the employer of Finn Gray?", "Gamma Ltd", "2018-01-01T00:00:00Z", ""),
    (
        "Who is the employer of Hal Blue?",
        "Delta Inc",
        "2016-01-01T00:00:00Z",
        "2022-01-01T00:00:00Z",
    ),
    (
        "Who is the employer of Hal Blue?",
        "Omega Co",
        "2022-01-01T00:00:00Z",
        "2022-01-10T00:00:00Z",
    ),
    ("Who is the head of state of Zeta?", "Ivy Brown", "2000-01-01T00:00:00Z", ""),
    ("Who is the head of state of Zeta?", "Jon Red", "2000-01-01T00:00:00Z", ""),
]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    with open(tmp_path / "questions.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for question, answer, start, end in ROWS:
            writer.writerow([question, answer, "", start, end])
    return tmp_path


def test_questions_keep_dated_open_answers_in_time_order(data: Path) -> None:
    questions = load_clark_questions(data)
    assert "Does Ann Smith chair Alpha Party?" not in questions  # yes/no skipped
    ceo = questions["Who is the CEO of Beta Corp?"]
    assert [t.answer for t in ceo] == ["Carl White", "Dana Green", "Eve Black"]
    with pytest.raises(ConfigurationError):
        load_clark_questions(data / "missing")


def test_cases_take_their_labels_from_the_validity_windows(data: Path) -> None:
    build = build_clark_cases(data)
    # usable: Alpha (2 answers) and Beta (3); Finn has one answer, Hal's latest has ended
    # 9 days in, Zeta's two answers start together
    assert build.funnel["questions_used"] == 2
    assert build.funnel["skipped_no_change_or_ended"] == 3
    by_id = {c.case_id: c for c in build.cases}
    assert len(build.cases) == 8 and build.funnel["verified"]["stale-redundant"] == 2
    beta = [c for c in build.cases if c.query == "Who is the CEO of Beta Corp?"]
    assert {c.reference for c in beta} == {"Eve Black"}  # current at the query date
    stale = next(c for c in beta if c.case_id.endswith("stale-redundant"))
    assert stale.structure == "redundant" and stale.fault_type == "stale"
    texts = {m.id: m.text for m in stale.memories}
    dates = {m.id: m.metadata["date"] for m in stale.memories}
    assert all("Dana Green" in texts[t] for t in stale.targets)  # the previous answer
    assert sorted(dates[t] for t in stale.targets)[0] == "2019-06-01"
    assert all(dates[t] < "2021-01-01" for t in stale.targets)
    wrong = next(c for c in beta if c.case_id.endswith("wrong-correction"))
    (target,) = wrong.targets
    fix = next(m for m in wrong.memories if m.id == target)
    assert fix.text.startswith("Correction: ") and fix.metadata["date"] > "2021-01-01"
    clean = next(c for c in beta if c.case_id.endswith("clean"))
    assert clean.targets == [] and clean.structure == "clean"
    assert all(len(c.memories) == 5 for c in by_id.values())
    # background: the latest statements of other questions
    background = [m for m in stale.memories if m.id.rsplit("-", 1)[-1].startswith("b")]
    assert len(background) == 2 and not any("Beta Corp" in m.text for m in background)


def test_newest_wins_fixes_stale_facts_and_follows_wrong_corrections(data: Path) -> None:
    cases = build_clark_cases(data).cases
    run = run_benchmark(cases, BenchSettings(methods=("newest", "meclear"), bootstrap_replicates=0))
    newest = {o.case_id: o.recovered for o in run.outcomes["newest"]}
    assert all(v for cid, v in newest.items() if "stale" in cid or "clean" in cid)
    assert not any(v for cid, v in newest.items() if "wrong-correction" in cid)
    assert all(o.recovered for o in run.outcomes["meclear"])


def test_the_recency_candidate_fixes_stale_facts_and_catches_wrong_corrections(
    data: Path,
) -> None:
    """Deterministic world: the stale facts clear through the verified recency candidate;
    for a wrong correction that candidate (the current statement) fails verification and
    attribution deletes the correction instead."""
    cases = build_clark_cases(data).cases
    methods = ("meclear", "meclear-recency")
    run = run_benchmark(cases, BenchSettings(methods=methods, bootstrap_replicates=0))
    plain = {o.case_id: o for o in run.outcomes["meclear"]}
    for outcome in run.outcomes["meclear-recency"]:
        case = next(c for c in cases if c.case_id == outcome.case_id)
        assert outcome.recovered and set(outcome.cleared) == set(case.targets)
        if case.fault_type == "stale":
            assert outcome.details["candidates"][-1]["family"] == "recency"
            assert outcome.model_calls < plain[outcome.case_id].model_calls
        if case.fault_type == "wrong_correction":
            families = {c["family"] for c in outcome.details["candidates"]}
            assert "recency" not in families
            assert not any(m.endswith("-cur") for m in outcome.cleared)


def test_stale_joint_cases_on_request(data: Path) -> None:
    """Two weaker stale copies: either alone is harmless, both together are harmful."""
    cases = build_clark_cases(data, kinds=("stale-joint",)).cases
    assert cases and all(c.structure == "joint" and c.fault_type == "stale" for c in cases)
    assert all(len(c.targets) == 2 for c in cases)
    run = run_benchmark(cases, BenchSettings(methods=("meclear-recency",), bootstrap_replicates=0))
    assert all(o.recovered for o in run.outcomes["meclear-recency"])


def test_clark_report_tables(data: Path) -> None:
    cases = build_clark_cases(data).cases
    methods = ("oracle", "meclear", "newest")
    run = run_benchmark(cases, BenchSettings(methods=methods, bootstrap_replicates=0))
    rows = [{"method": m, **o.model_dump()} for m in methods for o in run.outcomes[m]]
    table = {e["method"]: e for e in fault_table(rows)}
    assert table["newest"]["recovery"]["wrong corr."] == 0.0
    assert table["newest"]["recovery"]["stale"] == 100.0 == table["meclear"]["recovery"]["stale"]
    assert table["newest"]["calls"]["data"] == 0.0 < table["meclear"]["calls"]["stale"]
    # the headline is the data's faults only: the builder's wrong corrections stand apart
    data = [r for r in rows if r["fault_type"] != "wrong_correction" and r["method"] == "newest"]
    assert table["newest"]["n"] == len(data)
    assert table["newest"]["recovery"]["data"] == pytest.approx(
        100 * sum(r["expected_recovery"] for r in data) / len(data)
    )
    found = diagnosis(rows, "meclear")
    assert found["difference"] == 0.0 and found["losses"] == 0
    assert sum(k["cases"] for k in found["kinds"]) == found["cases"] == 4
    text = markdown(rows)
    assert "meclear minus newest on stale facts: +0.0 pp [+0.0, +0.0]" in text
    assert "Kinds our builder writes" in text and "wrong corr. (ours)" in text
    with pytest.raises(ValueError):
        diagnosis(rows, "meclear", against="loo")
    faulty = {c.case_id for c in cases if c.targets}
    assert judge_blind(cases, "persistent:1.0") == faulty
    assert judge_blind(cases, "noisy:0.5") == set() == judge_blind(cases, "reference")
    marked = diagnosis(rows, "meclear", blind=faulty)
    assert all(k["kind"].endswith(", judge wrong") for k in marked["kinds"])
    # a run with no stale fact of the data's (only builder-written kinds and clean queries
    # survived, as through the offline text reader) still gets its tables
    rest = markdown([r for r in rows if kind_of(r) != "stale"])
    assert "no stale-fact diagnosis" in rest and "| newest |" in rest


def test_split_and_command_line(data: Path, tmp_path: Path) -> None:
    assert clark_split("Who is the CEO of Beta Corp?") in ("dev", "test")
    dev = build_clark_cases(data, split="dev").cases
    test = build_clark_cases(data, split="test").cases
    assert len(dev) + len(test) == 8
    assert {c.query for c in dev}.isdisjoint({c.query for c in test})
    out = tmp_path / "cases.jsonl"
    assert main(["--data", str(data), "--max-questions", "1", "--out", str(out)]) == 0
    assert len(load_cases(out).cases) == 4
    argv = ["--data", str(data), "--max-questions", "1", "--kinds", "stale-joint", "--out"]
    assert main([*argv, str(out)]) == 0
    assert [c.structure for c in load_cases(out).cases] == ["joint"]
    with pytest.raises(ConfigurationError):
        build_clark_cases(data, kinds=("made-up",))
