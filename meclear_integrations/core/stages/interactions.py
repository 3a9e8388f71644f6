"""Stage 3 of Algorithm 1, pairwise interactions omega_ij (Eq. 15): diagnostic only.

The interactions are reported, never used to decide a clearance: exact on a complete
coalition table (or on the hierarchical estimator's reduced game), else sampled along
permutations.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 15.
"""

from __future__ import annotations

import numpy as np

from ..estimators import (
    ExactShapley,
    HierarchicalShapley,
    KernelShapley,
    PermutationShapley,
    ShapleyEstimator,
)
from ..estimators.interactions import (
    exact_interactions,
    interaction_label,
    sampled_interaction_plan,
    sampled_interactions,
)
from ..events import StageEvent
from ..report import PairInteraction
from .outcomes import closing
from .steps import Emit, Evaluate, Run, Steps, want

__all__ = [
    "SAMPLED_ORDERS",
    "complete_plan",
    "interaction_orders",
    "interactions",
    "reduced_interactions",
]

SAMPLED_ORDERS = 16
"""Permutations the sampled interactions are read along when the estimator gives no count."""


def interactions(
    run: Run,
    estimator: ShapleyEstimator,
    psi: list[float],
    orders: list[np.ndarray],
    rng: np.random.Generator,
) -> Steps[list[PairInteraction]]:
    """Estimate omega_ij for every pair (Eq. 15) when ``config.interactions`` asks.

    Args:
        run: the run.
        estimator: the estimator that attributed.
        psi: the contributions (they label each pair).
        orders: permutations already sampled with the screening batch (may be empty).
        rng: the run's random generator (draws permutations when none were sampled).

    Returns:
        The pairs with their omega and label; empty when interactions are off or K < 2.
    """
    cfg, k, ids = run.config, run.game.k, run.ids
    if not (cfg.interactions and k >= 2):
        return []
    run.stage = "interactions"
    yield Emit(StageEvent(stage="interactions", phase="start", payload={}))
    omegas = yield from closing("interactions", _omegas(run, estimator, orders, rng), run)
    pairs = [
        PairInteraction(
            memory_ids=(ids[i], ids[j]),
            omega=w,
            label=interaction_label(w, psi[i], psi[j], cfg.harm_tolerance),
        )
        for (i, j), w in omegas.items()
    ]
    yield Emit(
        StageEvent(
            stage="interactions",
            phase="end",
            payload={
                "pairs": [
                    {"ids": list(p.memory_ids), "omega": p.omega, "label": p.label} for p in pairs
                ]
            },
        )
    )
    return pairs


def _omegas(
    run: Run,
    estimator: ShapleyEstimator,
    orders: list[np.ndarray],
    rng: np.random.Generator,
) -> Steps[dict[tuple[int, int], float]]:
    """Eq. 15 exactly where the table allows, else sampled along permutations."""
    game, k = run.game, run.game.k
    if isinstance(estimator, HierarchicalShapley):
        return reduced_interactions(estimator)
    if complete_plan(estimator, k):
        return exact_interactions(game)
    if not orders:
        orders = interaction_orders(estimator, rng, k)
    yield Evaluate(want((sampled_interaction_plan(orders, k), run.single)))
    return sampled_interactions(game, orders)


def complete_plan(estimator: ShapleyEstimator, k: int) -> bool:
    """Whether the estimator's plan is the whole coalition table (exact Eq. 3 read-outs).

    Args:
        estimator: the run's estimator.
        k: the number of memories.

    Returns:
        True for exact enumeration and for a kernel plan of all 2^K coalitions.
    """
    if isinstance(estimator, ExactShapley):
        return True
    return isinstance(estimator, KernelShapley) and len(estimator.always) == 1 << k


def reduced_interactions(estimator: HierarchicalShapley) -> dict[tuple[int, int], float]:
    """Eq. 15 exactly on the hierarchical estimator's reduced game.

    The memories not singled out are null players up to the screening, so their pairs
    are 0 and omitted.

    Args:
        estimator: a hierarchical estimator after its estimate.

    Returns:
        omega by pair of screened memory positions; empty when the reduced game is not
        exact.
    """
    reduced = estimator.reduced
    if reduced is None or not estimator.reduced_exact:
        return {}
    single = {j: p.bit_length() - 1 for j, p in enumerate(reduced.players) if p.bit_count() == 1}
    return {
        (single[a], single[b]): omega
        for (a, b), omega in exact_interactions(reduced).items()  # type: ignore[arg-type]
        if a in single and b in single
    }


def interaction_orders(
    estimator: ShapleyEstimator, rng: np.random.Generator, k: int
) -> list[np.ndarray]:
    """The permutations the sampled interactions are read along.

    Args:
        estimator: the run's estimator (a permutation estimator's own orders are reused).
        rng: draws fresh permutations otherwise.
        k: the number of memories.

    Returns:
        The permutation estimator's orders, or fresh ones: the kernel estimator's budget
        / K of them, else :data:`SAMPLED_ORDERS`.
    """
    if isinstance(estimator, PermutationShapley) and estimator.orders:
        return list(estimator.orders)
    budget = estimator.budget if isinstance(estimator, KernelShapley) else None
    permutations = (budget or 0) // max(1, k) or SAMPLED_ORDERS
    return [rng.permutation(k) for _ in range(permutations)]
