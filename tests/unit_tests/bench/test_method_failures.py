"""Whose failure a failed (case, method) is: the reference's excludes the case, a baseline's
excludes the baseline's row (simulated world, no model)."""

from __future__ import annotations

from meclear_bench import load_builtin_cases
from meclear_bench.cli.bench import outcome_errors
from meclear_bench.methods.base import BenchMethod, MethodContext, MethodOutput
from meclear_bench.methods.none import NoClearance
from meclear_bench.results import build_results
from meclear_bench.runner import run_benchmark
from meclear_bench.settings import BenchSettings


class _Failing(BenchMethod):
    """Raises on the cases whose index is in ``on``."""

    def __init__(self, name: str, on: set[int]) -> None:
        self.name = name
        self.on = on
        self.seen = 0

    def run(self, ctx: MethodContext) -> MethodOutput:
        self.seen += 1
        if self.seen - 1 in self.on:
            raise ValueError("rater reply is not a list of 5 numbers: 'no'")
        return NoClearance().run(ctx)


def _run(reference: _Failing, baseline: _Failing, n: int = 4):
    cases = list(load_builtin_cases())[:n]
    settings = BenchSettings(
        methods=(reference.name, baseline.name, "none"),
        bootstrap_replicates=0,
        reference_method=reference.name,
    )
    return cases, run_benchmark(cases, settings, methods=[reference, baseline, NoClearance()])


def test_a_baseline_failing_everywhere_loses_its_row_not_the_cases() -> None:
    cases, run = _run(_Failing("ref", set()), _Failing("rater", {0, 1, 2, 3}))
    assert set(run.outcomes) == {"ref", "none"}
    assert len(run.outcomes["none"]) == len(cases)
    assert run.failed["rater"].startswith("failed on 4 of 4 cases the reference ref finished")
    results = build_results(run)
    assert results["methods"]["rater"]["status"] == "failed"
    assert results["n_cases"] == 4
    problems = outcome_errors(results)
    assert len(problems) == 1 and problems[0].startswith("rater: failed on 4 of 4")


def test_a_baseline_failing_once_loses_its_row_too() -> None:
    cases, run = _run(_Failing("ref", set()), _Failing("rater", {2}))
    assert "rater" in run.failed and "failed on 1 of 4" in run.failed["rater"]
    assert len(run.outcomes["ref"]) == len(cases)


def test_a_reference_failure_excludes_the_case_for_every_method() -> None:
    cases, run = _run(_Failing("ref", {1}), _Failing("rater", set()))
    assert not run.failed
    kept = [c.case_id for c in cases if c.case_id != cases[1].case_id]
    assert [o.case_id for o in run.outcomes["rater"]] == kept
    assert outcome_errors(build_results(run)) == []


def test_no_finished_case_is_an_error() -> None:
    _, run = _run(_Failing("ref", {0, 1}), _Failing("rater", set()), n=2)
    problems = outcome_errors(build_results(run))
    assert problems and problems[0].startswith("no case finished by every method (2 method")
