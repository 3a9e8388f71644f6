"""Stage 1 of Algorithm 1, local screening (steps 2-4): v(M), LOO effects, kappa labels.

The baseline v(M) and the leave-one-out effects d_i (Eq. 7) are evaluated and labelled
with the tolerance kappa. With ``early_exit`` the baseline goes first, alone, and the run
stops when no clearance can gain (Eq. 20 would select C_0); a prior candidate is verified
before attribution (``core.prior``), then the recency candidate (``core.recency``); with
``one_batch`` the attribution (and interaction) coalitions join the LOO batch.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 7, 18-20.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..errors import TooManyMemoriesError
from ..estimators import HierarchicalShapley, ShapleyEstimator, guarded
from ..estimators.interactions import sampled_interaction_plan
from ..events import StageEvent
from ..report import ClearanceReport
from ..screening import loo_coalitions, loo_label, measured_loo_effects
from ..verification.sequential import SequentialVerifier
from .interactions import complete_plan, interaction_orders
from .outcomes import clearance_end, closing, kept_report
from .prior import PriorTry, prior_search
from .recency import recency_search
from .steps import Emit, Evaluate, Run, Steps, evaluated, want
from .unexplained import probe_coalitions, probe_unexplained, unexplained, uniform_failure

__all__ = ["Screened", "early_exit", "noise_aware", "screening", "unexplained"]


@dataclass(slots=True)
class Screened:
    """What screening decided.

    Args:
        estimator: the estimator attribution will use (flat instead of hierarchical when
            the baseline's trials already disagree).
        exited: the full context recovers at the maximum: no clearance can gain.
        prior: the verified prior candidate and its put-back tests (None: attribute).
        orders: permutations of the sampled interactions, already evaluated.
    """

    estimator: ShapleyEstimator
    exited: bool = False
    prior: list[PriorTry] | None = None
    search: Literal["prior", "recency"] = "prior"
    """Which candidate ``prior`` is: the caller's or the recency candidate (``core.recency``)."""
    orders: list[np.ndarray] = field(default_factory=list)
    unexplained: str | None = None
    """Why the run stops after the unexplained-failure check (``unexplained``), if it
    does: ``no_memory_explains_failure`` or ``model_cannot_answer``."""


def screening(
    run: Run,
    estimator: ShapleyEstimator,
    rng: np.random.Generator,
    prior: list[int],
    unproven: list[int],
) -> Steps[Screened]:
    """Evaluate v(M) and the LOO effects (steps 2-4), or stop early.

    Args:
        run: the run.
        estimator: the estimator the configuration names for this context.
        rng: the run's random generator (interaction permutations).
        prior: positions of the prior candidate (empty: none).
        unproven: positions of its members to put back.

    Returns:
        What screening decided. The stage is closed here unless the run exits early or
        the prior candidate verified (:func:`early_exit`, ``prior_clearance`` close it).

    Raises:
        TooManyMemoriesError: the context holds more than ``max_memories``.
    """
    k = run.game.k
    yield Emit(StageEvent(stage="screening", phase="start", payload={"k": k}))
    screened = yield from closing("screening", _evaluate(run, estimator, rng, prior, unproven), run)
    if screened.exited or screened.prior is not None or screened.unexplained is not None:
        return screened
    cfg, game, ids = run.config, run.game, run.ids
    effects = measured_loo_effects(game)
    yield Emit(
        StageEvent(
            stage="screening",
            phase="end",
            payload={
                "baseline_value": game.value(game.full),
                "baseline_recovered": run.rule.recovers(game, game.full),
                "early_exit": False,
                "loo": {
                    i: {"effect": d, "label": loo_label(d, cfg.loo_tolerance)}
                    for i, d in zip(ids, effects, strict=True)
                    if d is not None
                },
            },
        )
    )
    return screened


def _evaluate(
    run: Run,
    estimator: ShapleyEstimator,
    rng: np.random.Generator,
    prior: list[int],
    unproven: list[int],
) -> Steps[Screened]:
    """The screening evaluations: exit test, prior candidate, then v(M) and LOO."""
    cfg, game = run.config, run.game
    k = game.k
    if k > cfg.budget.max_memories:
        raise TooManyMemoriesError(
            f"the context holds K={k} memories, more than max_memories="
            f"{cfg.budget.max_memories}; raise max_memories or retrieve fewer"
        )
    screened = Screened(estimator)
    if prior and run.prior_first:  # harm verified for this question: before the exit test
        screened.prior = yield from prior_search(run, prior, unproven)
        if screened.prior is not None:
            return screened
    if cfg.early_exit:
        screened.exited = yield from _exit_test(run)
    if prior and not screened.exited and not run.prior_first:  # verified before attribution
        screened.prior = yield from prior_search(run, prior, unproven)
    if run.recency is not None and not screened.exited and screened.prior is None:
        screened.prior = yield from recency_search(run)  # the older of dated memories
        screened.search = "recency"
    if screened.exited or screened.prior is not None:
        return screened
    if cfg.stops.unexplained is True:
        screened.unexplained = yield from unexplained(run)
        if screened.unexplained is not None:
            return screened
    estimator = screened.estimator = noise_aware(estimator, run)
    memory_loo = estimator.memory_loo
    loo = loo_coalitions(k)[1:] if memory_loo else []
    plan = guarded(estimator, estimator.plan, k) if cfg.one_batch else []
    if cfg.stops.unexplained == "auto" and cfg.early_exit:  # a cheap look first
        probe = probe_coalitions(estimator, plan, k)
        rest = len(set(plan) - set(probe))
        screened.unexplained = yield from probe_unexplained(run, probe, rest)
        if screened.unexplained is not None:
            return screened
    batch = want(([game.full], cfg.trials), (loo, run.single))
    if cfg.answer_groups is True:  # the memories alone and the empty control (core.grouping)
        batch += want(([0], run.single), ([1 << i for i in range(k)], run.single))
    if cfg.one_batch:
        batch += want((plan, run.single))
        if cfg.interactions and k >= 2 and not complete_plan(estimator, k) and memory_loo:
            screened.orders = interaction_orders(estimator, rng, k)
            batch += want((sampled_interaction_plan(screened.orders, k), run.single))
    yield Evaluate(batch)
    # every answer one failure: a model that cannot answer, or redundancy (stages.unexplained)
    screened.unexplained = yield from uniform_failure(run)
    return screened


def _exit_test(run: Run) -> Steps[bool]:
    """Evaluate the full context alone; True when no clearance can gain.

    Eq. 20 would select C_0: the context recovers and scores the maximum (under the
    sequential rule: verifiably recovers, and no candidate could show a gain over it).
    """
    return (yield from evaluated(run.rule.exit_test(run.game)))


def noise_aware(estimator: ShapleyEstimator, run: Run) -> ShapleyEstimator:
    """Attribute flat instead of hierarchically when the baseline's trials disagree.

    Hierarchical screening decides on single trials; when the baseline's trials already
    disagree (a sampled agent or a noisy judge) and the context is small enough for its
    flat fallback, KernelSHAP averages the noise over many coalitions instead.

    Args:
        estimator: the estimator the configuration names.
        run: the run (its baseline evaluated).

    Returns:
        The hierarchical estimator's flat fallback, or ``estimator``.
    """
    if (
        isinstance(estimator, HierarchicalShapley)
        and estimator.fallback is not None
        and SequentialVerifier.noisy(run.game)
    ):
        return estimator.fallback
    return estimator


def early_exit(run: Run) -> Steps[ClearanceReport]:
    """The full context recovers: no clearance can gain (Eq. 18-20 select C_0).

    Closes the screening stage and runs the clearance stage's events.

    Args:
        run: the run.

    Returns:
        The report with every memory kept and ``early_exit=True``.
    """
    game = run.game
    baseline = game.value(game.full)
    yield Emit(
        StageEvent(
            stage="screening",
            phase="end",
            payload={
                "baseline_value": baseline,
                "baseline_recovered": True,
                "early_exit": True,
                "loo": {},
            },
        )
    )
    yield Emit(
        StageEvent(
            stage="clearance",
            phase="start",
            payload={"candidates": [[]], "search": "nested"},
        )
    )
    report = kept_report(run, recovered=True, early_exit=True)
    yield clearance_end(0, report)
    return report
