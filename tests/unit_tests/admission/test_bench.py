"""Admission bench on the shipped sample (scripted stand-in), metrics, cases, CLI."""

from __future__ import annotations

import json
import random

import pytest

from meclear_bench.admission_eval import render_report, run_admission_bench
from meclear_integrations.admission.cases import (
    load_admission_cases,
    parse_admission_lines,
)
from meclear_integrations.admission.labels import REJECTION_REASONS
from meclear_integrations.admission.metrics import admission_metrics
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.cli import main


def test_sample_covers_every_reason_type() -> None:
    parsed = load_admission_cases()
    assert parsed.errors == [] and 28 <= len(parsed.cases) <= 40
    reasons = {c.reason_type for c in parsed.cases}
    assert reasons == {"directly_relevant", *REJECTION_REASONS}
    labels = [c.label for c in parsed.cases]
    assert labels.count("store") >= 10 and labels.count("do_not_store") >= 11


def test_bench_runs_every_method_on_the_sample() -> None:
    cases = load_admission_cases().cases
    result = run_admission_bench(cases, ScriptedAdmissionModel())
    assert [m.method for m in result.methods] == ["conmem", "a-mac", "a-mem", "memorybank"]
    assert result.scripted and "SCRIPTED" in result.notes[0]
    conmem = result.methods[0]
    assert conmem.metrics.n == len(cases) and conmem.metrics.errors == 0
    assert conmem.calls_per_case >= 14  # App. C: 14 standard calls + tie-breaks + repairs
    assert 0 < conmem.tie_break_rate < 1
    assert any(o.model_calls > 15 for o in conmem.cases)  # a repaired probe set
    for m in result.methods[1:]:
        assert m.calls_per_case == 1.0 and m.metrics.errors == 0
    # the decisions are recomputed from the per-case outcomes
    for m in result.methods:
        again = admission_metrics(
            [o.label for o in m.cases],
            [o.prediction for o in m.cases],
            [o.reason_type for o in m.cases],
        )
        assert again == m.metrics
    report = render_report(result)
    assert "SCRIPTED" in report and "| conmem |" in report and "stale_memory_use" in report


def test_metrics_match_scikit_learn() -> None:
    sk = pytest.importorskip("sklearn.metrics")
    rng = random.Random(3)
    labels = ["store", "do_not_store"]
    for _ in range(30):
        n = rng.randint(5, 40)
        gold = [rng.choice(labels) for _ in range(n)]
        pred = [rng.choice([*labels, None]) for _ in range(n)]
        m = admission_metrics(gold, pred, ["r"] * n)
        filled = [p or "error" for p in pred]
        assert m.accuracy == pytest.approx(sk.accuracy_score(gold, filled))
        recalls = sk.recall_score(gold, filled, labels=labels, average=None, zero_division=0)
        assert m.balanced_accuracy == pytest.approx(recalls.mean())
        assert m.macro_f1 == pytest.approx(
            sk.f1_score(gold, filled, labels=labels, average="macro", zero_division=0)
        )
        assert m.errors == pred.count(None)


def test_per_reason_recall() -> None:
    m = admission_metrics(
        ["store", "do_not_store", "do_not_store", "do_not_store"],
        ["store", "do_not_store", "store", None],
        ["directly_relevant", "over_inference", "over_inference", "privacy_overuse"],
    )
    assert m.per_reason["over_inference"].recall == 0.5
    assert m.per_reason["privacy_overuse"].recall == 0.0
    assert m.per_reason["directly_relevant"].n == 1


def test_case_parser_reports_bad_lines() -> None:
    good = {
        "id": "a",
        "candidate_memory": "m",
        "historical_context": "user: hi",
        "label": "store",
        "reason_type": "directly_relevant",
    }
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({**good, "id": "b", "label": "do_not_store"}),
        json.dumps({**good, "id": "c", "reason_type": "over_inference"}),
        json.dumps(good),
        "",
        json.dumps({**good, "id": "d", "label": "maybe"}),
    ]
    parsed = parse_admission_lines(lines)
    assert [c.id for c in parsed.cases] == ["a"]
    assert [n for n, _ in parsed.errors] == [2, 3, 4, 5, 7]
    assert "duplicate id" in parsed.errors[3][1]


def test_cli_writes_results_and_report(tmp_path, capsys) -> None:
    assert main(["admission-bench", "--out", str(tmp_path), "--methods", "conmem,a-mac"]) == 0
    out = capsys.readouterr().out
    assert "SCRIPTED stand-in, not an LLM" in out
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["scripted"] is True and data["n_cases"] == 32
    assert [m["method"] for m in data["methods"]] == ["conmem", "a-mac"]
    assert (tmp_path / "report.md").read_text().startswith("# Admission bench")


def test_cli_rejects_bad_case_files(tmp_path) -> None:
    bad = tmp_path / "cases.jsonl"
    bad.write_text('{"id": "x"}\n')
    with pytest.raises(SystemExit) as info:
        main(["admission-bench", "--cases", str(bad), "--out", str(tmp_path / "o")])
    assert info.value.code == 2
    with pytest.raises(SystemExit, match="unknown methods"):
        main(["admission-bench", "--out", str(tmp_path / "o"), "--methods", "sage"])
