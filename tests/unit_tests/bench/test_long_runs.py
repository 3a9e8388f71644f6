"""Shards, the run journal and clean stops, on the simulated world (no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meclear_bench import load_builtin_cases
from meclear_bench.journal import RunJournal, read_journal, run_identity
from meclear_bench.methods.base import BenchMethod, MethodContext, MethodOutput
from meclear_bench.methods.none import NoClearance
from meclear_bench.runner import CaseFailure, run_benchmark
from meclear_bench.settings import BenchSettings
from meclear_bench.shards import parse_shard, select_shard, shard_of
from meclear_bench.stopping import BudgetReached
from meclear_integrations.cli import main

from .real_fixtures import comparable, load_results


def test_shard_syntax_and_partition() -> None:
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "2", "a/b", "1/0"):
        with pytest.raises(ValueError, match="i/n"):
            parse_shard(bad)
    cases = list(load_builtin_cases())
    parts = [select_shard(cases, i, 3) for i in (1, 2, 3)]
    assert sorted(c.case_id for p in parts for c in p) == sorted(c.case_id for c in cases)
    assert all(parts)
    # Every case of a query lands in one shard, whatever the order of the cases.
    assert select_shard(cases[::-1], 2, 3) == parts[1][::-1]
    by_query: dict[str, set[int]] = {}
    for case in cases:
        by_query.setdefault(case.query_id, set()).add(shard_of(case, 3))
    assert all(len(s) == 1 for s in by_query.values())


class _Stopping(BenchMethod):
    """Stops the run on its third case, as a spent budget does inside a model call."""

    name = "stopping"

    def __init__(self) -> None:
        self.seen = 0

    def run(self, ctx: MethodContext) -> MethodOutput:
        self.seen += 1
        if self.seen == 3:
            raise RuntimeError("wrapped") from BudgetReached("--max-calls 9 reached", reason="x")
        return NoClearance().run(ctx)


def test_a_stop_keeps_what_finished_and_lists_the_rest() -> None:
    cases = list(load_builtin_cases())[:5]
    settings = BenchSettings(methods=("none", "stopping"), bootstrap_replicates=0)
    run = run_benchmark(cases, settings, methods=[NoClearance(), _Stopping()])
    assert run.stopped == "--max-calls 9 reached" and not run.stopped_fatal
    assert [o.case_id for o in run.outcomes["none"]] == [c.case_id for c in cases[:2]]
    assert run.incomplete == [c.case_id for c in cases[2:]]
    assert not run.failures  # a stop is not a case's failure


def test_finished_outcomes_are_reused_not_recomputed() -> None:
    cases = list(load_builtin_cases())[:4]
    settings = BenchSettings(methods=("none",), bootstrap_replicates=0)
    first = run_benchmark(cases, settings)
    done = {(o.case_id, "none"): o for o in first.outcomes["none"][:2]}

    class Counting(NoClearance):
        calls = 0

        def run(self, ctx: MethodContext) -> MethodOutput:
            Counting.calls += 1
            return super().run(ctx)

    method = Counting()
    method.name = "none"
    again = run_benchmark(cases, settings, methods=[method], completed=done)
    assert Counting.calls == 2
    assert again.outcomes["none"][:2] == first.outcomes["none"][:2]  # the very outcomes
    assert [o.case_id for o in again.outcomes["none"]] == [c.case_id for c in cases]


def test_journal_resume_checks_the_run_and_tolerates_a_cut_line(tmp_path: Path) -> None:
    cases = list(load_builtin_cases())[:3]
    settings = BenchSettings(methods=("none",))
    identity = run_identity(settings, cases)
    journal = RunJournal(tmp_path)
    assert journal.start({"identity": identity}, resume=False) == {}
    run = run_benchmark(cases, settings, on_outcome=journal.record_outcome)
    journal.record_failure(CaseFailure(case_id=cases[0].case_id, method="none", error="boom"))
    journal.record_outcome("none", run.outcomes["none"][0])  # retried later: last line wins
    with open(journal.path, "a", encoding="utf-8") as handle:
        handle.write('{"type": "outcome", "case_id": ')  # interrupted mid-line
    outcomes, failures = read_journal(journal.path)
    assert len(outcomes) == 3 and not failures
    resumed = RunJournal(tmp_path).start({"identity": identity}, resume=True)
    assert set(resumed) == set(outcomes)
    report_only = BenchSettings(methods=("none",), bootstrap_replicates=10)
    RunJournal(tmp_path).start({"identity": run_identity(report_only, cases)}, resume=True)
    other = run_identity(BenchSettings(methods=("none", "loo")), cases)
    with pytest.raises(ValueError, match="differs in settings"):
        RunJournal(tmp_path).start({"identity": other}, resume=True)
    with pytest.raises(ValueError, match="no run to resume"):
        RunJournal(tmp_path / "empty").start({"identity": identity}, resume=True)


def test_simulated_shards_merge_to_the_single_run(tmp_path: Path) -> None:
    flags = ["--methods", "meclear,loo,none", "--no-progress", "--no-figures"]
    assert main(["bench", *flags, "--bootstrap", "300", "--out", str(tmp_path / "one")]) == 0
    for i in (1, 2, 3):
        shard = ["--shard", f"{i}/3", "--out", str(tmp_path / f"s{i}")]
        assert main(["bench", *flags, "--bootstrap", "300", *shard]) == 0
    dirs = [str(tmp_path / f"s{i}") for i in (3, 1, 2)]
    assert main(["bench", "merge", *dirs, "--out", str(tmp_path / "m"), "--no-figures"]) == 0
    merged, single = load_results(tmp_path / "m"), load_results(tmp_path / "one")
    assert merged["simulated"] is True and merged["n_cases"] == single["n_cases"]
    assert comparable(merged) == comparable(single)
    manifest = json.loads((tmp_path / "s1" / "run.json").read_text())
    assert manifest["shard"] == [1, 3] and manifest["status"] == "complete"
