"""The headline's curves: one panel per equal-calls run, PNG and SVG."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meclear_bench.headline_figure import (
    headline_table,
    main,
    targets_table,
    write_headline_figure,
)


def _doc(k: int, judge: str) -> dict:
    def point(label: str, calls: float, rec: float) -> dict:
        return {"label": label, "model_calls_per_case": calls, "expected_recovery": rec}

    def block(rec: float, calls: float, bg: float) -> dict:
        overall = {
            "expected_recovery": rec,
            "model_calls_per_case": calls,
            "cleared_extra_background": bg,
            "harm_rate": 0.0,
        }
        return {"status": "ok", "overall": overall}

    results = {
        "methods": {"meclear": block(0.74, 60.0, 0.04), "contextcite": block(0.70, 65.0, 0.1)},
        "paired": {
            "contextcite": {"expected_recovery": {"delta": 0.04, "ci": [0.01, 0.07]}},
            "oracle": {"expected_recovery": {"delta": -0.06, "ci": [-0.08, -0.04]}},
        },
    }
    return {
        "results": results,
        "results_per_case": results,
        "fixed_rungs": {"contextcite": "B=12"},
        "judge": judge,
        "n_cases": 12,
        "command": f"meclear bench-sweep equal-calls --k {k} --out X",
        "curves": {
            "meclear": [point("default", 60.0, 0.74)],
            "contextcite": [point("B=8", 40.0, 0.6), point("B=32", 90.0, 0.73)],
            "oracle": [point("ceiling", 0.0, 0.8)],
        },
    }


def test_one_panel_per_run_in_png_and_svg(tmp_path: Path) -> None:
    written = write_headline_figure(
        [_doc(5, "noisy:0.05"), _doc(10, "persistent:0.05")], tmp_path / "h"
    )
    assert [p.suffix for p in written] == [".png", ".svg"]
    svg = written[1].read_text(encoding="utf-8")
    assert "SIMULATED" in svg and "K = 10" in svg and "persistent:0.05" in svg
    with pytest.raises(ValueError):
        write_headline_figure([], tmp_path / "none")


def test_command_line_reads_run_directories(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "equal-calls.json").write_text(json.dumps(_doc(20, "noisy:0.05")), encoding="utf-8")
    assert main([str(tmp_path / "fig"), str(run)]) == 0
    assert (tmp_path / "fig.png").stat().st_size > 0
    assert main([]) == 2


def test_the_summary_table_reads_the_fixed_budgets_and_the_intervals() -> None:
    table = headline_table([_doc(5, "noisy:0.05")])
    assert "| 5 | noisy:0.05 | 12 | 74.0 (60 calls, bg 0.040, harm 0.0%) |" in table
    assert "70.0 (B=12, 65 calls, bg 0.100): +4.0 [+1.0, +7.0]" in table
    assert table.rstrip().endswith("-6.0 [-8.0, -4.0] |") and "| n/a |" in table
    assert "(per case, 65 calls" in headline_table([_doc(5, "noisy:0.05")], "results_per_case")


def test_the_targets_table_picks_the_best_baseline() -> None:
    table = targets_table([_doc(10, "persistent:0.05")])
    row = (
        "| 10 | persistent:0.05 | 12 | 74.0 (60) | contextcite (B=12) | 70.0 (65) "
        "| +4.0 [+1.0, +7.0]"
    )
    assert row in table and "| 0.040 / 0.100 | 0.0% | -6.0 [-8.0, -4.0] |" in table
