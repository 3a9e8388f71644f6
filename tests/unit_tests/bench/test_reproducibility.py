"""A noisy benchmark run is reproducible at any concurrency (judge noise seeded by content)."""

from __future__ import annotations

import pytest

from meclear_bench import BenchSettings, load_builtin_cases, run_benchmark
from meclear_integrations.core import ClearanceConfig
from meclear_integrations.simulation import JudgeSignal


def _run(judge: str, concurrency: int) -> dict[str, list[tuple[object, ...]]]:
    settings = BenchSettings(
        methods=("meclear", "loo", "contextcite"),
        engine=ClearanceConfig(budget={"max_concurrency": concurrency}),
        temperature=0.2,
        judge=JudgeSignal.parse(judge),
        bootstrap_replicates=0,
    )
    run = run_benchmark(load_builtin_cases()[:18], settings, workers=concurrency)
    return {
        method: [
            (o.case_id, o.flagged, o.cleared, o.model_calls, o.judge_calls, o.recovered)
            for o in outcomes
        ]
        for method, outcomes in run.outcomes.items()
    }


@pytest.mark.parametrize("judge", ["noisy:0.05", "mixed:0.05:0.05", "persistent:0.1"])
def test_noisy_run_is_identical_at_concurrency_1_and_8(judge: str) -> None:
    one, eight = _run(judge, 1), _run(judge, 8)
    assert set(one) == {"meclear", "loo", "contextcite"}
    assert one == eight


def test_evidence_correct_is_a_headline_metric() -> None:
    from meclear_bench.metrics import metric_value

    settings = BenchSettings(methods=("oracle", "none"), temperature=0.2, bootstrap_replicates=0)
    cases = load_builtin_cases()
    run = run_benchmark(cases, settings)
    assert metric_value(run.outcomes["oracle"], "evidence_correct") == 1.0
    none = metric_value(run.outcomes["none"], "evidence_correct")
    assert none is not None and none < 0.5  # the faults dominate most built-in contexts
