"""Stage 2 of Algorithm 1, cooperative attribution (step 5): psi and the harmful set H^.

Contributions are exact (Eq. 3), sampled over permutations (Eq. 11, intervals of
Eq. 13), paired KernelSHAP, or hierarchical; H^ is the set of memories below -tau
(Eq. 14), under the interval rule only those whose interval is clear of zero, or, with an
estimator's ``answer_flags``, as the answers in the table back (``core.answer_flags``).

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 3, 11, 13-14.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..answer_flags import answer_backed_flags
from ..estimators import HierarchicalShapley, ShapleyEstimate, ShapleyEstimator, guarded
from ..events import StageEvent
from ..game import CoalitionGame
from ..grouping import answer_group
from ..report import MemoryAttribution
from ..screening import loo_label, measured_loo_effects
from ..verification.rule import harmful_positions
from .outcomes import closing
from .steps import Emit, Evaluate, Run, Steps, want

__all__ = ["Attribution", "attribution"]


@dataclass(frozen=True, slots=True)
class Attribution:
    """What attribution found.

    Args:
        estimator: the estimator that attributed.
        psi: the contribution psi_i of each memory, by position.
        sampled: whether any contribution is an estimate with a non-zero interval.
        priority: H^ (Eq. 14), most harmful first (Eq. 16).
        fallback: memories below -tau whose interval reaches zero (interval rule), tried
            as fallback candidates after H^.
        group: memories grouped by the failing answer they support alone.
    """

    estimator: ShapleyEstimator
    psi: list[float]
    sampled: bool
    priority: list[int]
    fallback: list[int]
    group: tuple[int, ...] = ()
    """Memories that alone give the failing answer (``core.grouping.answer_group``)."""


def attribution(run: Run, estimator: ShapleyEstimator) -> Steps[Attribution]:
    """Estimate every memory's contribution and flag the harmful ones (step 5).

    Args:
        run: the run (its ``attributions`` are set when the stage ends).
        estimator: the estimator screening chose (with ``one_batch`` its planned
            coalitions are already evaluated).

    Returns:
        The contributions, H^ and the fallback memories.
    """
    cfg, game = run.config, run.game
    k, ids = game.k, run.ids
    run.stage = "attribution"
    run.estimator = estimator.name
    yield Emit(
        StageEvent(stage="attribution", phase="start", payload={"estimator": estimator.name})
    )
    estimate = yield from closing("attribution", _estimate(run, estimator), run)
    psi = [float(x) for x in estimate.values]
    sampled = bool(np.any(estimate.lower < estimate.upper))
    use_interval = cfg.harm_rule == "interval" or (
        cfg.harm_rule == "auto" and estimator.interval_harm
    )
    upper = [float(x) for x in estimate.upper] if use_interval else None
    priority = harmful_positions(psi, cfg.harm_tolerance, upper)
    if upper is not None and cfg.table_evidence.answer_flags and estimator.enumerates:
        backed = answer_backed_flags(
            game,
            psi,
            [float(x) for x in estimate.lower],
            upper,
            cfg.harm_tolerance,
            cfg.verification.success_threshold,
        )
        priority = priority if backed is None else backed
    # Below -tau but with an interval that still reaches zero: not flagged, but tried
    # as fallback clearance candidates after those inside H^ (interval rule only).
    fallback = (
        [i for i in harmful_positions(psi, cfg.harm_tolerance) if i not in priority]
        if upper is not None
        else []
    )
    group = (
        answer_group(game, cfg.verification.success_threshold)
        if cfg.groups_wanted or run.grouped
        else []
    )
    ranks = {i: r + 1 for r, i in enumerate(sorted(range(k), key=lambda i: (psi[i], i)))}
    effects = measured_loo_effects(game)  # attribution may have measured more of them
    labels = [None if d is None else loo_label(d, cfg.loo_tolerance) for d in effects]
    run.attributions = [
        MemoryAttribution(
            memory_id=ids[i],
            position=i,
            loo_effect=effects[i],
            loo_label=labels[i],
            shapley=psi[i],
            shapley_interval=(float(estimate.lower[i]), float(estimate.upper[i])),
            rank=ranks[i],
            harmful=i in priority,
            cleared=False,
            answer_group=i in group,
        )
        for i in range(k)
    ]
    yield Emit(
        StageEvent(
            stage="attribution",
            phase="end",
            payload={
                "shapley": {
                    i: {"value": v, "interval": [float(lo), float(hi)], "rank": ranks[p]}
                    for p, (i, v, lo, hi) in enumerate(
                        zip(ids, psi, estimate.lower, estimate.upper, strict=True)
                    )
                },
                "harmful_ids": [ids[i] for i in priority],
                "answer_group_ids": [ids[i] for i in group],
                "coalitions": game.coalitions_evaluated,
                **hierarchy_payload(estimator, ids),
            },
        )
    )
    return Attribution(estimator, psi, sampled, priority, fallback, tuple(group))


def _estimate(run: Run, estimator: ShapleyEstimator) -> Steps[ShapleyEstimate]:
    """Evaluate the estimator's plan (unless screening did), its further rounds, read psi."""
    k = run.game.k
    if not run.config.one_batch:
        yield Evaluate(want((guarded(estimator, estimator.plan, k), run.single)))
    more = guarded(estimator, estimator.extend, run.game)
    while more:  # adaptive stopping: further rounds until the estimator is settled
        yield Evaluate(want((more, run.single)))
        more = guarded(estimator, estimator.extend, run.game)
    refine: Callable[[CoalitionGame], list[tuple[int, int]]] | None = getattr(
        estimator, "refine", None
    )  # more trials where intervals overlap (exact enumeration with an error model)
    while refine is not None and (extra := guarded(estimator, refine, run.game)):
        yield Evaluate(list(extra))
    return guarded(estimator, estimator.estimate, run.game)


def hierarchy_payload(estimator: ShapleyEstimator, ids: list[str]) -> dict[str, object]:
    """What hierarchical attribution did, with memory ids.

    Args:
        estimator: the estimator that attributed.
        ids: the memory ids by position.

    Returns:
        ``{"hierarchy": {...}}`` with its blocks and suspects as ids; empty for the other
        estimators.
    """
    if not isinstance(estimator, HierarchicalShapley):
        return {}
    info = estimator.describe()
    blocks = info.pop("blocks")
    suspects = info.pop("suspects")
    return {
        "hierarchy": {
            **info,
            "blocks": [[ids[i] for i in b] for b in blocks],  # type: ignore[attr-defined]
            "suspect_ids": [ids[i] for i in suspects],  # type: ignore[attr-defined]
        }
    }
