"""Model calls per clean and faulty query by preset, and the cheap preset's dev-split rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from meclear_bench import BenchSettings, build_method, load_builtin_cases
from meclear_bench.cost_sweep import (
    admissible,
    cheap_grid,
    cheap_sweep,
    choose_cheap,
    cost_split,
    preset_costs,
)
from meclear_bench.outcomes import CaseOutcome
from meclear_integrations.cli import main
from meclear_integrations.core import AutoShapley, ClearanceConfig

BASE = BenchSettings(
    engine=ClearanceConfig(budget={"max_concurrency": 1}, seed=3),
    bootstrap_replicates=0,
)


@pytest.fixture(scope="module")
def cases():
    chosen = [c for c in load_builtin_cases() if c.case_id.startswith("builtin-ana-ben")]
    assert {c.structure for c in chosen} >= {"clean", "direct", "redundant", "joint"}
    return chosen


def _outcome(structure: str, agent: int, judge: int, **fields: Any) -> CaseOutcome:
    values: dict[str, Any] = {
        "case_id": f"{structure}-{agent}",
        "cluster": "c",
        "query_id": "q",
        "structure": structure,
        "fault_type": "none",
        "targets": [],
        "ranking": [],
        "flagged": [],
        "cleared": [],
        "hits": 0,
        "complete": None,
        "exact": None,
        "extra_background": 0,
        "cleared_extra_background": 0,
        "recovered": True,
        "target_ranks": [],
        "evaluator_calls": agent,
        "coalitions": agent,
        "agent_calls": agent,
        "judge_calls": judge,
        "model_calls": agent + judge,
        "wall_seconds": 0.0,
    }
    values.update(fields)
    return CaseOutcome(**values)


def test_cost_split_groups_clean_and_faulty() -> None:
    outcomes = [
        _outcome("clean", 1, 1),
        _outcome("clean", 3, 1),
        _outcome("direct", 20, 3, targets=["f"], hits=1),
        _outcome("redundant", 30, 2, targets=["f", "g"], hits=1, recovered=False),
        _outcome("joint", 10, 1, targets=["a", "b"], hits=2, cleared_extra_background=1),
    ]
    split = cost_split(outcomes)
    clean, faulty = split["clean"], split["faulty"]
    assert (clean["n"], clean["agent_calls"], clean["judge_calls"]) == (2, 2.0, 1.0)
    assert clean["model_calls"] == 3.0 and clean["max_model_calls"] == 4
    assert clean["recall_at_m"] is None
    assert faulty["n"] == 3 and faulty["agent_calls"] == 20.0 and faulty["judge_calls"] == 2.0
    assert faulty["max_model_calls"] == 32
    assert faulty["recovery"] == pytest.approx(2 / 3)
    assert faulty["recall_at_m"] == pytest.approx(4 / 5)  # hits / |F|, target-micro
    assert faulty["cleared_background"] == pytest.approx(1 / 3)
    assert cost_split([_outcome("clean", 1, 1)])["faulty"] == {"n": 0}


def _point(calls: float, recovery: float, recall: float, **extra: float) -> dict[str, Any]:
    faulty = {"n": 10, "model_calls": calls, "recovery": recovery, "recall_at_m": recall}
    faulty.update({"harm_rate": 0.0, "cleared_background": 0.0, **extra})
    clean = {"n": 10, "harm_rate": 0.0, "cleared_background": 0.0}
    return {"clean": clean, "faulty": faulty}


def test_the_rule_takes_the_cheapest_admissible_row() -> None:
    reference = {5: _point(27.0, 0.99, 0.98), 10: _point(46.0, 1.0, 0.98)}
    rows = [
        {"points": {5: _point(18.0, 1.0, 0.99), 10: _point(25.0, 1.0, 0.94)}},  # recall -4 pp
        {"points": {5: _point(22.0, 1.0, 1.0), 10: _point(29.0, 0.975, 0.98)}},  # recovery -2.5
        {"points": {5: _point(22.0, 0.97, 0.97), 10: _point(30.0, 0.98, 0.955)}},  # at the bounds
        {"points": {5: _point(20.0, 1.0, 1.0), 10: _point(30.5, 1.0, 1.0)}},  # ties, cheaper mean
        {"points": {5: _point(1.0, 1.0, 1.0), 10: _point(1.0, 1.0, 1.0, harm_rate=0.01)}},
        {"points": {5: _point(1.0, 1.0, 1.0), 10: _point(1.0, 1.0, 1.0, cleared_background=0.1)}},
    ]
    verdicts = [admissible(row, reference) for row in rows]
    assert verdicts == [False, False, True, True, False, False]
    # 30.5 is within one call of 30.0 and cheaper over every K (25.25 < 26.0)
    assert choose_cheap(rows, reference, objective_k=10) == 3
    assert choose_cheap(rows, reference, objective_k=10, tie=0.1) == 2
    assert choose_cheap(rows[:2], reference, objective_k=10) is None
    loose = choose_cheap(rows, reference, objective_k=10, max_recall_drop=0.05)
    assert loose == 0


def test_the_grid_holds_the_chosen_preset() -> None:
    grid = cheap_grid()
    chosen = {
        "exact_budget": 16,
        "hierarchical_from": 5,
        "blocks": 4,
        "branching": 2,
        "anchor_samples": 32,
    }
    assert chosen in grid and len(grid) == len({json.dumps(g, sort_keys=True) for g in grid})
    assert ClearanceConfig.cheap() == ClearanceConfig(estimator=AutoShapley(**chosen))


def test_preset_costs_on_builtin_cases(cases) -> None:
    doc = preset_costs(cases, base=BASE)
    rows = {r["preset"]: r for r in doc["rows"]}
    assert list(rows) == ["default", "cheap", "paper"] and doc["simulated"]
    # the early exit: a clean query costs the baseline only; the paper has none
    assert rows["cheap"]["clean"]["model_calls"] == rows["default"]["clean"]["model_calls"]
    assert rows["paper"]["clean"]["model_calls"] > 5 * rows["default"]["clean"]["model_calls"]
    for row in rows.values():
        assert row["faulty"]["harm_rate"] == 0.0 and row["clean"]["harm_rate"] == 0.0


def test_cheap_sweep_rejects_a_setting_that_cannot_recover(cases) -> None:
    # tau = 0.99 flags nothing and cannot recover; {} is the default itself, within every
    # bound of itself (the built-in cases are harder than LoCoMo's: the default deletes
    # about 0.14 background memories per case there, hence the looser bound)
    grid = [{"harm_tolerance": 0.99, "escalation": False}, {}]
    doc = cheap_sweep({5: cases, 10: cases}, base=BASE, grid=grid, max_background=0.5)
    assert [row["admissible"] for row in doc["rows"]] == [False, True]
    assert doc["chosen"] == 1 and set(doc["reference"]) == {5, 10}
    assert doc["rows"][1]["points"] == doc["reference"]
    with pytest.raises(ValueError, match="objective K=20"):
        cheap_sweep({5: cases}, base=BASE, grid=grid, objective_k=20)
    with pytest.raises(ValueError, match="unknown rule"):
        cheap_sweep({10: cases}, base=BASE, grid=grid, max_recal_drop=0.1)


def test_meclear_cheap_method_runs_the_preset() -> None:
    method = build_method("meclear:cheap", BASE)
    assert method.name == "meclear:cheap"
    assert method.config == ClearanceConfig.cheap(seed=3, budget={"max_concurrency": 1})  # type: ignore[attr-defined]


def test_cli_cost_table_and_cheap_needs_locomo(tmp_path: Path, capsys) -> None:
    out = tmp_path / "cost"
    argv = ["bench-sweep", "cost", "--no-progress", "--no-figures", "--out", str(out)]
    assert main(argv) == 0
    doc = json.loads((out / "cost.json").read_text())
    assert [r["preset"] for r in doc["rows"]] == ["default", "cheap", "paper"]
    report = (out / "cost.md").read_text()
    assert "SIMULATED" in report and "| cheap |" in report and "bench-sweep cost" in report
    assert main(["bench-sweep", "cheap", "--no-progress", "--out", str(tmp_path / "c")]) == 2
    assert "--locomo" in capsys.readouterr().err
