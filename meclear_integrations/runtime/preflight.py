"""The least a clearance costs, known before any model call.

A query whose ``max_evaluator_calls`` cannot pay for a clearance that clears anything is
declined up front by the integrations (``status="skipped"``, reason ``budget``), instead
of spending part of the budget and failing open on exactly the queries that need it.

:func:`minimum_evaluator_calls` counts, for a context of K memories and the run's
settings, the evaluator calls every clearing run makes: the baseline's T trials, one call
(T without ``adaptive_trials``) for each distinct coalition of the screening batch (the
leave-one-outs of Eq. 7 when the estimator uses them, and the estimator's first plan:
every coalition for exact enumeration, the KernelSHAP budget, the permutations' prefixes,
the hierarchical estimator's block unions), and the remaining trials of one verified
candidate (Eq. 18-19). Later stages (hierarchical screening, extra trials of the
sequential rule, more candidates, escalation) only add to it, so a cap below it can never
see a clearance finish; a run that exits early on a clean context costs less, but clears
nothing either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.config import ClearanceConfig
from ..core.estimators import make_estimator
from ..core.screening import loo_coalitions

if TYPE_CHECKING:
    import numpy as np
else:
    from ..core.lazy import np

__all__ = ["budget_shortfall", "minimum_evaluator_calls"]


def minimum_evaluator_calls(config: ClearanceConfig, k: int) -> int:
    """The evaluator calls every run that can clear something makes (module docstring).

    Args:
        config: The engine settings of the run.
        k: The number of memories in the context.

    Returns:
        The lower bound (0 for an empty context).
    """
    if k <= 0:
        return 0
    single = 1 if config.adaptive_trials else config.trials
    estimator = make_estimator(config, np.random.default_rng(config.seed), k)
    full, *leave_one_out = loo_coalitions(k)
    batch = set(estimator.plan(k))
    if estimator.memory_loo:
        batch.update(leave_one_out)
    batch.discard(full)
    candidate = config.trials - single  # a candidate's trials beyond its first
    return config.trials + single * len(batch) + candidate


def budget_shortfall(config: ClearanceConfig, k: int) -> int | None:
    """The least a clearance needs when ``max_evaluator_calls`` cannot pay it, else None.

    Args:
        config: The engine settings of the run.
        k: The number of memories in the context.

    Returns:
        :func:`minimum_evaluator_calls` when it exceeds the cap, else None (no cap, or
        it fits).
    """
    cap = config.budget.max_evaluator_calls
    if cap is None or k > config.budget.max_memories:
        return None
    try:
        needed = minimum_evaluator_calls(config, k)
    except Exception:  # settings the engine itself rejects: let the run report them
        return None
    return needed if needed > cap else None
