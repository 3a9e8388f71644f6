"""``meclear bench --stream --mode``: the production loop on a simulated clock (SIMULATED)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meclear_bench.stream_build import build_streams
from meclear_bench.stream_loop import LoopSettings, loop_summary, run_loop, time_to_fix
from meclear_integrations import ClearanceConfig
from meclear_integrations.cli import main

from .test_stream import REAL

pytestmark = pytest.mark.skipif(not REAL, reason="LoCoMo data not present")
ENGINE = ClearanceConfig(seed=0, budget={"max_concurrency": 1})


@pytest.fixture(scope="module")
def build():
    return build_streams(REAL[0], conversations=["26"], max_queries_per_conversation=30)


def test_background_makes_no_request_path_call_loses_no_job_and_fixes_failures(
    build, tmp_path
) -> None:
    settings = LoopSettings(call_seconds=0.5, interval_seconds=2.0, workers=4)
    runs = {
        mode: loop_summary(
            run_loop(build, mode, "judge", engine=ENGINE, ledger_dir=tmp_path, settings=settings)
        )
        for mode in ("none", "inline", "background")
    }
    none, inline, background = runs["none"], runs["inline"], runs["background"]
    assert inline["request_model_calls"] > 0 and background["request_model_calls"] == 0
    assert inline["request_seconds_p99"] > 1.0  # modelled: rounds of agent + judge calls
    assert background["audit_model_calls"] > 0
    jobs = background["jobs"]
    assert jobs["lost"] == 0 and jobs["dead"] == 0 and jobs["done"] == jobs["submitted"]
    # background is never worse than no clearance, and fixes some failing questions later
    assert none["accuracy"] <= background["accuracy"] <= inline["accuracy"]
    assert background["time_to_fix"]["fixed"] >= 1
    assert background["time_to_fix"]["median_seconds"] > 0
    # scoped: nothing withheld on the strength of another question; review spares true notes
    assert background["off_topic_withheld"] == 0
    for summary in (inline, background):
        assert summary["review"]["true_proposed"] == []
    assert none["review"] == {}


def test_time_to_fix_counts_from_the_first_wrong_answer() -> None:
    from meclear_bench.stream_loop import LoopOutcome

    def o(t: float, q: int, correct: bool) -> LoopOutcome:
        return LoopOutcome(
            conversation="c",
            position=int(t),
            question=q,
            kind="original",
            time=t,
            failing=not correct,
            correct=correct,
            request_calls=0,
            request_seconds=0.0,
        )

    fix = time_to_fix([o(0, 1, False), o(4, 1, False), o(10, 1, True), o(2, 2, False)])
    assert fix == {"fixed": 1, "never_fixed": 1, "median_seconds": 10.0, "mean_seconds": 10.0}


def test_the_cli_writes_the_loop_report_and_figure(tmp_path: Path) -> None:
    out = tmp_path / "loop"
    code = main([
        "bench", "--stream", "--locomo", str(REAL[0]), "--conversations", "26",
        "--max-queries", "12", "--mode", "none,background", "--out", str(out), "--no-progress",
    ])  # fmt: skip
    assert code == 0
    results = json.loads((out / "loop_results.json").read_text())
    assert results["simulated"] and set(results["modes"]) == {"none", "background"}
    assert "--mode none,background" in results["command"]
    assert (out / "loop_accuracy.png").stat().st_size > 0
    assert "SIMULATED" in (out / "loop_report.md").read_text()


def test_a_reask_storm_costs_at_most_one_audit_per_storm_with_the_bounds(build, tmp_path) -> None:
    small = build.model_copy(
        update={"streams": [s.model_copy(update={"queries": s.queries[:6]}) for s in build.streams]}
    )
    out = {}
    for bounds in (True, False):
        settings = LoopSettings(interval_seconds=180.0, workers=4, reask=49, audit_bounds=bounds)
        run = run_loop(
            small,
            "background",
            "always",
            engine=ENGINE,
            ledger_dir=tmp_path / str(bounds),
            settings=settings,
        )
        out[bounds] = loop_summary(run)["reask"]
    bounded, unbounded = out[True], out[False]
    assert bounded["asks"] == unbounded["asks"] == 50 * bounded["storms"]
    assert bounded["storm_audits_max"] <= 1 < unbounded["storm_audits_max"]
    assert bounded["audit_calls_mean"] < unbounded["audit_calls_mean"]
