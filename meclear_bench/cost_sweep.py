"""What a query costs per engine preset, and the dev-split choice of the cheap preset.

Model calls (agent + judge, deduplicated as the integrations do) per *clean* query (no
harmful memory: the full context already answers) and per *faulty* one, with what the
faulty queries get for them (unseen-trial recovery, Recall@|M|), SIMULATED:

- :func:`preset_costs`: the presets side by side on one case set (the docs' "Cost"
  table, on the test split);
- :func:`cheap_sweep`: a grid of cost settings on the dev split at several K, and the
  choice behind :meth:`~meclear_integrations.core.ClearanceConfig.cheap` (see
  :func:`choose_cheap`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from itertools import product
from typing import Any

from meclear_integrations.core import AutoShapley, Budget, ClearanceConfig

from .cases import BenchCase
from .methods.meclear import MeClearMethod
from .outcomes import CaseOutcome
from .runner import run_benchmark
from .settings import BenchSettings

__all__ = [
    "CHEAP_KS",
    "RULE",
    "admissible",
    "cheap_grid",
    "cheap_sweep",
    "choose_cheap",
    "cost_split",
    "preset_costs",
]

CHEAP_KS = (5, 10, 20)
"""Retrieval budgets the cheap preset is chosen over (the objective is the middle one)."""

Progress = Callable[[str], None]


def cost_split(outcomes: Sequence[CaseOutcome]) -> dict[str, dict[str, Any]]:
    """Model calls and quality of clean and of faulty cases.

    Args:
        outcomes: One method's outcomes.

    Returns:
        ``{"clean": ..., "faulty": ...}``, each with ``n``, the mean ``agent_calls``,
        ``judge_calls`` and ``model_calls`` per case, ``max_model_calls``, ``recovery``
        (unseen trials), ``recall_at_m`` (faulty: hits / |F|, target-micro; None for
        clean), ``harm_rate``, ``cleared_background`` (non-target memories deleted per
        case) and ``unverified_rate``; None values for an empty group.
    """
    out: dict[str, dict[str, Any]] = {}
    for group in ("clean", "faulty"):
        rows = [o for o in outcomes if (o.structure == "clean") == (group == "clean")]
        n = len(rows)
        if not n:
            out[group] = {"n": 0}
            continue
        targets = sum(o.m for o in rows)
        out[group] = {
            "n": n,
            "agent_calls": sum(o.agent_calls for o in rows) / n,
            "judge_calls": sum(o.judge_calls for o in rows) / n,
            "model_calls": sum(o.agent_calls + o.judge_calls for o in rows) / n,
            "max_model_calls": max(o.agent_calls + o.judge_calls for o in rows),
            "recovery": sum(o.recovered for o in rows) / n,
            "recall_at_m": sum(o.hits for o in rows) / targets if targets else None,
            "harm_rate": sum(o.harm for o in rows) / n,
            "cleared_background": sum(o.cleared_extra_background for o in rows) / n,
            "unverified_rate": sum(o.status == "unverified" for o in rows) / n,
        }
    return out


def _measure(cases: Sequence[BenchCase], base: BenchSettings, config: ClearanceConfig) -> Any:
    run = run_benchmark(cases, base, methods=[MeClearMethod(config, name="meclear")])
    return cost_split(run.outcomes["meclear"])


def _config(base: BenchSettings, preset: str, **overrides: object) -> ClearanceConfig:
    """A preset with the run's seed and concurrency (as ``meclear:PRESET`` in the bench)."""
    engine = base.engine
    return ClearanceConfig.preset(
        preset,  # type: ignore[arg-type]
        seed=engine.seed,
        budget=Budget(max_concurrency=engine.budget.max_concurrency),
        **overrides,
    )


def preset_costs(
    cases: Sequence[BenchCase],
    *,
    base: BenchSettings,
    presets: Sequence[str] = ("default", "cheap", "paper"),
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Clean and faulty model calls per query for each engine preset.

    Args:
        cases: The cases.
        base: The settings (judge, temperature, seed; the engine's seed and concurrency).
        presets: Engine preset names.
        progress: Called with a line per preset.

    Returns:
        ``{"rows": [{"preset", "clean", "faulty"}...], ...}``.
    """
    say = progress or (lambda _: None)
    settings = base.model_copy(update={"bootstrap_replicates": 0})
    rows = []
    for preset in presets:
        split = _measure(cases, settings, _config(settings, preset))
        rows.append({"preset": preset, **split})
        faulty = split["faulty"]
        say(f"{preset}: faulty {faulty.get('model_calls') or 0:.1f} model calls")
    return {
        "simulated": True,
        "judge": str(settings.judge),
        "temperature": settings.temperature,
        "n_cases": len(cases),
        "rows": rows,
    }


def cheap_grid() -> list[dict[str, Any]]:
    """The cost settings searched for the cheap preset.

    Where hierarchical attribution starts, its blocks G (2^G block unions), sub-blocks per
    cut and random anchor samples, with exact enumeration up to K = 4 (``exact_budget=16``,
    the automatic estimator's value when the preset was chosen). The kernel budget per
    memory stays the default's (10 K coalitions): below ``hierarchical_from`` = 5 every
    context is enumerated exactly, so it only sizes the hierarchical estimator's flat
    fallback, and below about 3 K the regression is unstable.

    Returns:
        Settings of the automatic estimator (:class:`AutoShapley`), one per grid point
        (a point may also name configuration settings).
    """
    return [
        {
            "exact_budget": 16,  # enumeration to K = 4, as when the grid was chosen
            "hierarchical_from": start,
            "blocks": blocks,
            "branching": branching,
            "anchor_samples": n,
        }
        for start, blocks, branching, n in product((5, 7), (3, 4, 5), (2, 4), (8, 32))
    ]


def _overrides(values: Mapping[str, Any]) -> dict[str, Any]:
    """A grid point as configuration overrides.

    The automatic estimator's settings go to an :class:`AutoShapley`, the rest to the
    configuration.
    """
    own = set(inspect.signature(AutoShapley).parameters)
    estimator = {k: v for k, v in values.items() if k in own}
    rest = {k: v for k, v in values.items() if k not in own}
    return {**rest, "estimator": AutoShapley(**estimator)} if estimator else rest


def _label(values: Mapping[str, Any]) -> dict[str, Any]:
    """JSON-able settings (an estimator by its settings)."""
    return {k: (v.settings() if hasattr(v, "settings") else v) for k, v in values.items()}


RULE: dict[str, float] = {
    "max_recovery_drop": 0.02,
    "max_recall_drop": 0.03,
    "max_background": 0.05,
    "tie": 1.0,
}
"""The cheap preset's selection rule (see :func:`choose_cheap`)."""


def admissible(
    row: Mapping[str, Any],
    reference: Mapping[int, Mapping[str, Any]],
    *,
    max_recovery_drop: float = RULE["max_recovery_drop"],
    max_recall_drop: float = RULE["max_recall_drop"],
    max_background: float = RULE["max_background"],
) -> bool:
    """Whether a grid point may be the cheap preset.

    At every K of ``reference`` its faulty queries recover within ``max_recovery_drop``
    of the reference (the default) and reach Recall@|M| within ``max_recall_drop`` of it,
    no case is harmed, and at most ``max_background`` non-target memories are deleted per
    case.

    Args:
        row: ``{"points": {K: cost_split(...)}}``.
        reference: K -> the default's :func:`cost_split`.
        max_recovery_drop: Most recovery lost against the reference (a fraction).
        max_recall_drop: Most Recall@|M| lost against the reference.
        max_background: Most deleted non-target memories per case.

    Returns:
        True when the row meets every bound.
    """
    slack = 1e-12
    for k, ref in reference.items():
        point, ref_faulty = row["points"][k], ref["faulty"]
        faulty = point["faulty"]
        if faulty["recovery"] < ref_faulty["recovery"] - max_recovery_drop - slack:
            return False
        recall, ref_recall = faulty["recall_at_m"] or 0.0, ref_faulty["recall_at_m"] or 0.0
        if recall < ref_recall - max_recall_drop - slack:
            return False
        for group in (point["clean"], faulty):
            if group.get("n") and (
                group["harm_rate"] > 0.0 or group["cleared_background"] > max_background + slack
            ):
                return False
    return True


def choose_cheap(
    rows: Sequence[Mapping[str, Any]],
    reference: Mapping[int, Mapping[str, Any]],
    *,
    objective_k: int,
    tie: float = RULE["tie"],
    **bounds: float,
) -> int | None:
    """Index of the cheap preset's row, or None when no row is :func:`admissible`.

    Among the admissible rows, the fewest mean model calls per faulty query at
    ``objective_k``; rows within ``tie`` calls of it go to the fewest mean over every K
    (then the earlier row).

    Args:
        rows: ``{"points": {K: cost_split(...)}}`` per grid point.
        reference: K -> the default's :func:`cost_split`.
        objective_k: The K whose faulty cost is minimised.
        tie: Model calls within which rows tie on the objective.
        **bounds: The bounds of :func:`admissible`.

    Returns:
        The chosen row's index.
    """
    ok = [i for i, row in enumerate(rows) if admissible(row, reference, **bounds)]
    if not ok:
        return None

    def cost(i: int, k: int) -> float:
        return float(rows[i]["points"][k]["faulty"]["model_calls"])

    best = min(cost(i, objective_k) for i in ok)
    near = [i for i in ok if cost(i, objective_k) <= best + tie]
    return min(near, key=lambda i: (sum(cost(i, k) for k in reference) / len(reference), i))


def cheap_sweep(
    cases: Mapping[int, Sequence[BenchCase]],
    *,
    base: BenchSettings,
    grid: Sequence[dict[str, Any]] | None = None,
    objective_k: int = 10,
    progress: Progress | None = None,
    **rule: float,
) -> dict[str, Any]:
    """Choose the cheap preset's settings on ``cases`` (the dev split, per K).

    Args:
        cases: K -> the cases built at that retrieval budget.
        base: The settings (judge and temperature: the standard setting).
        grid: Settings of the automatic estimator and of the configuration (None:
            :func:`cheap_grid`).
        objective_k: The K whose faulty cost is minimised (a key of ``cases``).
        progress: Called with a line per grid point.
        **rule: Replaces values of :data:`RULE` (the bounds of :func:`admissible`, the
            ``tie`` of :func:`choose_cheap`).

    Returns:
        The default's figures per K, every grid point's, and the chosen index (None when
        no grid point is admissible).

    Raises:
        ValueError: ``objective_k`` is not a key of ``cases``, or an unknown rule setting.
    """
    unknown = set(rule) - set(RULE)
    if unknown:
        raise ValueError(f"unknown rule settings {sorted(unknown)}; known: {sorted(RULE)}")
    if objective_k not in cases:
        raise ValueError(f"objective K={objective_k} is not among the case sets {sorted(cases)}")
    say = progress or (lambda _: None)
    settings = base.model_copy(update={"bootstrap_replicates": 0})
    reference = {k: _measure(c, settings, _config(settings, "default")) for k, c in cases.items()}
    rows = []
    for values in grid if grid is not None else cheap_grid():
        config = _config(settings, "default", **_overrides(values))
        points = {k: _measure(c, settings, config) for k, c in cases.items()}
        rows.append({"settings": _label(values), "points": points})
        calls = points[objective_k]["faulty"].get("model_calls") or 0.0
        say(f"{_label(values)}: {calls:.1f} model calls per faulty query at K={objective_k}")
    rules = {**RULE, **rule}
    bounds = {k: v for k, v in rules.items() if k != "tie"}
    for row in rows:
        row["admissible"] = admissible(row, reference, **bounds)
    chosen = choose_cheap(rows, reference, objective_k=objective_k, **rules)
    return {
        "simulated": True,
        "judge": str(settings.judge),
        "temperature": settings.temperature,
        "n_cases": {k: len(c) for k, c in cases.items()},
        "objective": (
            f"fewest model calls per faulty query at K={objective_k}; at every K recovery "
            f"within {100 * rules['max_recovery_drop']:g} pp and Recall@|M| within "
            f"{100 * rules['max_recall_drop']:g} pp of the default, harm 0, deleted "
            f"background <= {rules['max_background']:g} per case; ties within "
            f"{rules['tie']:g} call: fewest mean over every K"
        ),
        "objective_k": objective_k,
        "reference": reference,
        "rows": rows,
        "chosen": chosen,
    }
