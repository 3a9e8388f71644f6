"""Every method at equal model calls: per-case budgets, paired intervals, curves."""

from __future__ import annotations

from pathlib import Path

from meclear_bench import BenchSettings, load_builtin_cases
from meclear_bench.equal_calls import (
    default_ladders,
    equal_calls,
    equal_calls_table,
    write_equal_calls_figure,
)
from meclear_integrations.simulation import JudgeSignal


def test_each_baseline_spends_at_least_meclears_calls_unless_its_ladder_ends(
    tmp_path: Path,
) -> None:
    cases = load_builtin_cases()[:12]
    base = BenchSettings(
        temperature=0.2, judge=JudgeSignal.parse("noisy:0.05"), bootstrap_replicates=50
    )
    ladders = default_ladders(base, families=("contextcite", "loo", "newest"))
    ladders["contextcite"] = ladders["contextcite"][3:7]  # B=24, B=32, then T=2, T=3
    ladders["loo"] = ladders["loo"][:3]
    doc = equal_calls(cases, base=base, ladders=ladders)
    results = doc["results"]
    assert set(results["methods"]) == {"meclear", "contextcite", "loo", "newest"}
    for family in ("contextcite", "loo"):
        for _rung, spent, meclear, last in doc["choices"][family].values():
            assert spent >= meclear or last
    assert sum(doc["matched_rungs"]["contextcite"].values()) == results["n_cases"]
    assert doc["matched_rungs"]["newest"] == {"0 calls": results["n_cases"]}
    calls = {n: b["overall"]["model_calls_per_case"] for n, b in results["methods"].items()}
    assert calls["contextcite"] >= calls["meclear"]  # T up to 3 on 32 coalitions suffices
    for _rung, spent, meclear, last in doc["choices"]["loo"].values():
        assert spent >= meclear or last
    assert calls["newest"] == 0.0
    paired = results["paired"]["contextcite"]["expected_recovery"]
    assert paired["ci"] is not None and paired["ci"][0] <= paired["delta"] <= paired["ci"][1]
    curve = [p["model_calls_per_case"] for p in doc["curves"]["contextcite"]]
    assert len(curve) == 4 and curve == sorted(curve)
    # fixed budgets (the headline): one rung per baseline, its mean calls at least MeClear's
    # unless the ladder ends; the per-case matching is kept beside it
    per_case = doc["results_per_case"]
    assert set(per_case["methods"]) == set(results["methods"])
    labels = [r["budget"] for r in doc["curves"]["contextcite"]]
    fixed = doc["fixed_rungs"]["contextcite"]
    rung_calls = dict(
        zip(
            labels,
            curve_calls := [p["model_calls_per_case"] for p in doc["curves"]["contextcite"]],
            strict=True,
        )
    )
    first = next(
        (lb for lb, c in rung_calls.items() if c >= doc["meclear_calls_per_case"]), labels[-1]
    )
    assert fixed == first and len(curve_calls) == len(labels)
    assert calls["contextcite"] == rung_calls[fixed]
    table = equal_calls_table(doc)
    assert "| contextcite |" in table and "MeClear - method" in table
    assert "| contextcite |" in equal_calls_table(doc, "results_per_case")
    assert write_equal_calls_figure(doc, tmp_path / "calls.png").stat().st_size > 0


def test_gap_to_the_oracle_by_outcome_kind() -> None:
    from meclear_bench.gap import gap_by_outcome, outcome_kind

    def row(method: str, cid: str, targets: list[str], cleared: list[str], e: float) -> dict:
        return {
            "method": method,
            "case_id": cid,
            "targets": targets,
            "cleared": cleared,
            "expected_recovery": e,
            "status": "complete",
        }

    rows = [
        row("meclear", "a", ["f1", "f2"], ["f1"], 0.5),
        row("oracle", "a", ["f1", "f2"], ["f1", "f2"], 0.9),
        row("meclear", "b", ["f1"], ["f1"], 0.8),
        row("oracle", "b", ["f1"], ["f1"], 0.8),
    ]
    assert outcome_kind(rows[0]) == "partial" and outcome_kind(rows[2]) == "exact"
    assert outcome_kind({**rows[0], "status": "unverified"}) == "abstained"
    # an early stop and a failed run are kinds of their own, never lumped with abstentions
    assert outcome_kind({**rows[0], "cleared": [], "status": "skipped"}) == "early stop"
    assert outcome_kind({**rows[0], "cleared": [], "status": "failed"}) == "failed"
    assert outcome_kind({**rows[0], "targets": [], "status": "skipped"}) == "clean"
    gap = gap_by_outcome(rows)
    assert gap[0]["kind"] == "partial" and round(gap[0]["gap_pp"], 6) == 20.0
    assert gap[1] == {"kind": "exact", "cases": 1, "method": 0.8, "oracle": 0.8, "gap_pp": 0.0}


def test_losses_against_a_baseline_by_both_kinds() -> None:
    from meclear_bench.gap import losses_against

    def row(method: str, cid: str, cleared: list[str], e: float, bg: float = 0.0) -> dict:
        return {
            "method": method,
            "case_id": cid,
            "targets": ["f1", "f2"],
            "cleared": cleared,
            "expected_recovery": e,
            "cleared_extra_background": bg,
            "status": "complete",
        }

    rows = [
        row("meclear", "a", ["f1"], 0.5),
        row("contextcite", "a", ["f1", "f2", "b1"], 0.9, 1.0),
        row("meclear", "b", ["f1", "f2"], 0.9),
        row("contextcite", "b", [], 0.1),
    ]
    lost = losses_against(rows, "meclear", "contextcite")
    assert len(lost) == 1 and lost[0]["case_ids"] == ["a"]
    assert (lost[0]["kind"], lost[0]["against_kind"]) == ("partial", "superset")
    assert round(lost[0]["loss_pp"], 6) == 20.0 and lost[0]["bg_against"] == 1.0


def test_losses_name_the_structures_of_the_lost_cases() -> None:
    from meclear_bench.gap import losses_against

    rows = [
        {"method": m, "case_id": cid, "structure": s, "targets": ["f1", "f2"], "cleared": c}
        | {"expected_recovery": e, "status": "complete"}
        for m, cid, s, c, e in (
            ("meclear", "a", "redundant", ["f1"], 0.5),
            ("proxyspex", "a", "redundant", ["f1", "f2"], 0.9),
            ("meclear", "b", "joint", ["f2"], 0.4),
            ("proxyspex", "b", "joint", ["f1", "f2"], 0.9),
        )
    ]
    (lost,) = losses_against(rows, "meclear", "proxyspex")
    assert lost["structures"] == {"redundant": 1, "joint": 1} and lost["case_ids"] == ["a", "b"]


def test_gap_reruns_a_fixed_budget_cell_of_an_equal_calls_run(tmp_path: Path, capsys) -> None:
    import json

    import pytest

    from meclear_bench.gap import main, rerun_fixed_budget

    eq = tmp_path / "eq"
    eq.mkdir()
    doc = {
        "command": "meclear bench-sweep equal-calls --split all --setting deterministic "
        "--seed 0 --out eq",
        "fixed_rungs": {"contextcite": "B=8", "oracle": "ceiling"},
        "results": {"methods": {}},
    }
    (eq / "equal-calls.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match="proxyspex"):
        rerun_fixed_budget(eq, tmp_path / "none", "proxyspex")
    assert (
        main([str(tmp_path / "out"), "--from-equal-calls", str(eq), "--against", "contextcite"])
        == 0
    )
    printed = capsys.readouterr().out
    assert "rerun contextcite (B=8)" in printed and "loses to contextcite" in printed
    rows = [json.loads(line) for line in (tmp_path / "out" / "outcomes.jsonl").open()]
    by_method: dict[str, list[dict]] = {}
    for row in rows:
        by_method.setdefault(row["method"], []).append(row)
    assert set(by_method) == {"meclear", "oracle", "contextcite"}
    cases = load_builtin_cases()
    assert all(len(v) == len(cases) for v in by_method.values())
    # the oracle's clearance costs no model call; the baseline's rung does
    assert all(r["model_calls"] == 0 for r in by_method["oracle"])
    assert sum(r["model_calls"] for r in by_method["contextcite"]) > 0
