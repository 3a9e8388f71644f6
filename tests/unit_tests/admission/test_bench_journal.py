"""admission-bench: --limit's stratified subset, the journal (resume, torn lines, a foreign
run), partial reports and the bootstrap intervals, on the scripted stand-in."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from meclear_bench.admission_eval import METHODS, run_admission_bench
from meclear_bench.admission_journal import JOURNAL_NAME, AdmissionJournal, JournalHeader
from meclear_bench.admission_sample import interleaved, stratified_subset
from meclear_integrations.admission.cases import AdmissionCase, load_admission_cases
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.cli import main
from meclear_integrations.core.errors import ConfigurationError


def _cases() -> list[AdmissionCase]:
    return load_admission_cases().cases


@pytest.mark.parametrize("limit", [2, 3, 5, 9, 16, 31])
def test_limit_keeps_both_labels_in_proportion(limit: int) -> None:
    cases = _cases()
    subset = stratified_subset(cases, limit)
    assert len(subset) == limit
    labels = Counter(c.label for c in subset)
    assert set(labels) == {"store", "do_not_store"}
    share = sum(c.label == "store" for c in cases) / len(cases)
    assert abs(labels["store"] - share * limit) <= 1
    assert len({c.id for c in subset}) == limit
    order = [c.id for c in cases]
    assert [c.id for c in subset] == sorted((c.id for c in subset), key=order.index)
    assert stratified_subset(cases, limit) == subset  # deterministic


def test_limit_spreads_over_reasons_and_bounds() -> None:
    cases = _cases()
    assert len({c.reason_type for c in stratified_subset(cases, 12)}) >= 7
    assert stratified_subset(cases, None) == cases
    assert stratified_subset(cases, 10_000) == cases
    with pytest.raises(ConfigurationError):
        stratified_subset(cases, 0)


def test_every_prefix_of_the_running_order_is_mixed() -> None:
    cases = _cases()
    order = interleaved(cases, lambda c: c.label)
    assert sorted(c.id for c in order) == sorted(c.id for c in cases)
    share = sum(c.label == "store" for c in cases) / len(cases)
    for k in range(2, len(order) + 1):
        stores = sum(c.label == "store" for c in order[:k])
        assert abs(stores - share * k) <= 1


def _bench(tmp_path, *extra: str) -> int:
    flags = ["--out", str(tmp_path / "o"), "--no-progress", "--bootstrap", "200"]
    return main(["admission-bench", *flags, *extra])


def _journal_lines(tmp_path) -> list[str]:
    return (tmp_path / "o" / JOURNAL_NAME).read_text(encoding="utf-8").splitlines()


def test_a_killed_run_resumes_and_matches_an_uninterrupted_one(tmp_path, monkeypatch) -> None:
    assert _bench(tmp_path, "--limit", "8") == 0
    whole = json.loads((tmp_path / "o" / "results.json").read_text())
    lines = _journal_lines(tmp_path)
    assert len(lines) == 1 + 8 * len(METHODS)  # the header, then one line per decision
    assert json.loads(lines[0])["header"]["model"] == "scripted"
    # kill it after 13 decisions, in the middle of writing the 14th line
    kept = lines[:14]
    torn = lines[14][: len(lines[14]) // 2]
    (tmp_path / "o" / JOURNAL_NAME).write_text("\n".join([*kept, torn]), encoding="utf-8")
    (tmp_path / "o" / "results.json").unlink()

    # --report-only: figures for what finished, labelled partial, no model built
    monkeypatch.setattr(
        "meclear_bench.cli.admission_bench._model",
        lambda *a: pytest.fail("--report-only built a model"),
    )
    assert _bench(tmp_path, "--limit", "8", "--report-only") == 0
    partial = json.loads((tmp_path / "o" / "results.json").read_text())
    assert partial["complete"] is False and partial["n_cases"] == 8
    assert partial["n_finished"] == 3  # 13 decisions = 3 whole cases (4 methods each) + 1
    assert all(m["metrics"]["n"] == 3 for m in partial["methods"])
    assert "PARTIAL" in (tmp_path / "o" / "report.md").read_text()
    monkeypatch.undo()

    model = ScriptedAdmissionModel()  # counts its calls
    monkeypatch.setattr("meclear_bench.cli.admission_bench._model", lambda *a: model)
    assert _bench(tmp_path, "--limit", "8") == 0
    resumed = json.loads((tmp_path / "o" / "results.json").read_text())
    # only the missing decisions were made: 8 x 4 - 13, ConMem's at >= 14 calls each
    lines = _journal_lines(tmp_path)
    assert len(lines) == 1 + 8 * len(METHODS)  # the torn line dropped, nothing twice
    assert all(json.loads(raw) for raw in lines)
    # case-major order: the kill came after cases 1-3 and ConMem on case 4
    assert 14 * 4 + 3 * 5 <= model.calls < 14 * 8
    assert resumed["complete"] is True and resumed["n_finished"] == 8
    for a, b in zip(whole["methods"], resumed["methods"], strict=True):
        assert a["metrics"] == b["metrics"]
    assert whole["intervals"] == resumed["intervals"]

    # a finished run makes no call at all when rerun
    before = model.calls
    assert _bench(tmp_path, "--limit", "8") == 0
    assert model.calls == before


def test_a_journal_of_another_run_is_refused(tmp_path, capsys) -> None:
    assert _bench(tmp_path, "--limit", "2") == 0
    assert _bench(tmp_path, "--limit", "2", "--seed", "7") == 2
    assert "written by another run" in capsys.readouterr().err
    header = JournalHeader(model="openai:x", seed=42, model_kwargs={"max_tokens": 64})
    with pytest.raises(ConfigurationError, match="another run"):
        AdmissionJournal(tmp_path / "o" / JOURNAL_NAME, header)


def test_partial_progress_is_written_after_every_case(tmp_path) -> None:
    cases = stratified_subset(_cases(), 4)
    journal = AdmissionJournal(tmp_path / JOURNAL_NAME, JournalHeader(model="scripted", seed=42))
    seen: list[int] = []
    result = run_admission_bench(
        cases,
        ScriptedAdmissionModel(),
        journal=journal,
        max_concurrent_cases=1,
        on_progress=lambda r: seen.append(r.n_finished),
        bootstrap=100,
    )
    assert seen == [1, 2, 3, 4] and result.complete
    assert result.bootstrap_replicates == 100
    by = {(i.method, i.metric): i for i in result.intervals}
    for m in result.methods:
        i = by[(m.method, "macro_f1")]
        assert i.value == pytest.approx(m.metrics.macro_f1)
        assert i.low is not None and i.low <= i.value <= i.high
    diffs = {(d.method, d.metric): d for d in result.differences}
    for m in result.methods[1:]:
        d = diffs[(m.method, "balanced_accuracy")]
        expected = result.methods[0].metrics.balanced_accuracy - m.metrics.balanced_accuracy
        assert d.difference == pytest.approx(expected) and d.n == 4


def test_bad_agent_kwargs_and_limit_fail_before_any_call(tmp_path, capsys) -> None:
    assert _bench(tmp_path, "--agent-kwargs", "[1]", "--openai-model", "m") == 2
    assert "--agent-kwargs: expected a JSON object" in capsys.readouterr().err
    assert _bench(tmp_path, "--agent-kwargs", "{nope", "--openai-model", "m") == 2
    assert "--agent-kwargs: not JSON" in capsys.readouterr().err
    assert _bench(tmp_path, "--limit", "0") == 2
    assert "--limit must be at least 1" in capsys.readouterr().err


LOCOMO = Path("/work/shared/data/locomo10")


@pytest.mark.skipif(not LOCOMO.is_dir(), reason="LoCoMo data not present")
def test_locomo_measured_only_reports_label_sources_apart(tmp_path, capsys) -> None:
    flags = ["--locomo", str(LOCOMO), "--measured-only", "--limit", "2", "--clark-pairs", "0"]
    assert _bench(tmp_path, *flags, "--faults-per-conversation", "1") == 0
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    assert data["model"] == "offline-reader" and "OFFLINE TEXT READER" in data["notes"][0]
    groups = {g["group"]: g["metrics"]["n"] for g in data["groups"] if g["method"] == "conmem"}
    assert groups == {"locomo": 14, "ours": 14}  # 7 test conversations x 2 kinds each
    report = (tmp_path / "o" / "report.md").read_text()
    assert "nobody here wrote them" in report and "OURS" in report
    # --kinds keeps LoCoMo's labels only; the journal's decisions on them are reused
    (tmp_path / "o" / "results.json").unlink()
    assert (
        _bench(tmp_path, *flags, "--faults-per-conversation", "1", "--kinds", "useful,unused") == 0
    )
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    assert {g["group"] for g in data["groups"]} == {"locomo"} and data["n_cases"] == 14
    lines = _journal_lines(tmp_path)
    assert len(lines) == 1 + 28 * len(METHODS)  # nothing decided twice
    assert _bench(tmp_path, *flags, "--kinds", "useful,nonsense") == 2
    assert "--kinds: unknown ['nonsense']" in capsys.readouterr().err


def test_failed_conmem_decisions_are_also_scored_as_the_gate_rejects_them() -> None:
    from meclear_bench.admission_eval import CaseOutcome, build_result, render_report
    from meclear_integrations.admission.config import AdmissionConfig

    cases = stratified_subset(_cases(), 4)  # 2 store, 2 do-not-store

    def outcome(case: AdmissionCase, prediction: str | None) -> CaseOutcome:
        return CaseOutcome(
            id=case.id,
            label=case.label,
            reason_type=case.reason_type,
            prediction=prediction,
            score=None,
            error=None if prediction else "probe_validation: still invalid",
            model_calls=10,
            latency_seconds=1.0,
            wall_seconds=1.0,
        )

    done = {("conmem", c.id): outcome(c, None) for c in cases}
    done |= {("a-mac", c.id): outcome(c, "store") for c in cases}
    result = build_result(
        cases,
        done,
        methods=["conmem", "a-mac"],
        config=AdmissionConfig(),
        model_name="openai:m",
        scripted=False,
        bootstrap=50,
    )
    conmem = result.methods[0].metrics
    assert conmem.errors == 4 and conmem.balanced_accuracy == 0.0
    report = render_report(result)
    assert "ConMem decided 0 of 4 cases" in report
    assert "bal. acc 50.0 %, macro-F1 33.3 %, store recall 0.0 %" in report
    diff = next(d for d in result.differences if d.metric == "balanced_accuracy")
    assert diff.difference == pytest.approx(-0.5)
