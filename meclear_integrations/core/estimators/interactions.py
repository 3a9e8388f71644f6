"""Pairwise interactions omega_ij (Eq. 15) and their structural labels.

Delta_ij v(S) = v(S u {i, j}) - v(S u {i}) - v(S u {j}) + v(S). With the predecessor set
P_ij(pi) = P_i(pi) minus {j}, averaging over uniform permutations gives the Shapley
interaction index; with a complete coalition table it is computed exactly.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 15.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np
else:
    from ..lazy import np

from ..game import Coalition, CoalitionGame

__all__ = [
    "InteractionLabel",
    "exact_interactions",
    "interaction_label",
    "sampled_interaction_plan",
    "sampled_interactions",
]

InteractionLabel = Literal["redundant", "joint", "additive", "uncertain"]


def _delta(game: CoalitionGame, s: Coalition, i: int, j: int) -> float:
    bi, bj = 1 << i, 1 << j
    return game.value(s | bi | bj) - game.value(s | bi) - game.value(s | bj) + game.value(s)


def exact_interactions(game: CoalitionGame) -> dict[tuple[int, int], float]:
    """Shapley interaction index for every pair from a complete table.

    Args:
        game: a table holding every coalition.

    Returns:
        omega_ij by pair (i < j).
    """
    k = game.k
    out: dict[tuple[int, int], float] = {}
    for i, j in combinations(range(k), 2):
        total = 0.0
        pair = (1 << i) | (1 << j)
        for s in range(1 << k):
            if s & pair:
                continue
            size = s.bit_count()
            weight = math.factorial(size) * math.factorial(k - size - 2) / math.factorial(k - 1)
            total += weight * _delta(game, s, i, j)
        out[(i, j)] = total
    return out


def _predecessors(order: np.ndarray, i: int, j: int) -> Coalition:
    s = 0
    for position in order:
        p = int(position)
        if p == i:
            break
        if p != j:
            s |= 1 << p
    return s


def sampled_interaction_plan(orders: list[np.ndarray], k: int) -> list[Coalition]:
    """Coalitions needed by Eq. 15 over the sampled permutations.

    Args:
        orders: the permutations.
        k: the number of memories.

    Returns:
        The coalitions the sampled estimate reads.
    """
    plan: list[Coalition] = []
    for i, j in combinations(range(k), 2):
        bi, bj = 1 << i, 1 << j
        for order in orders:
            s = _predecessors(order, i, j)
            plan.extend((s, s | bi, s | bj, s | bi | bj))
    return plan


def sampled_interactions(
    game: CoalitionGame, orders: list[np.ndarray]
) -> dict[tuple[int, int], float]:
    """omega^_ij = (1/L) sum_l Delta_ij v^(P_ij(pi_l)) (Eq. 15).

    Args:
        game: the table with the plan evaluated.
        orders: the permutations.

    Returns:
        omega_ij by pair (i < j).
    """
    out: dict[tuple[int, int], float] = {}
    for i, j in combinations(range(game.k), 2):
        deltas = [_delta(game, _predecessors(order, i, j), i, j) for order in orders]
        out[(i, j)] = float(np.mean(deltas))
    return out


def interaction_label(omega: float, psi_i: float, psi_j: float, tau: float) -> InteractionLabel:
    """Label a pair by the sign of omega against the sign of the pair's joint effect.

    - ``additive``: |omega| <= tau;
    - ``redundant`` (substitution): omega opposes the pair's effect, each member masks the
      other (redundant harm: psi < 0, omega > 0);
    - ``joint``: omega has the sign of the effect, which is expressed only together (joint
      harm: psi < 0, omega < 0; for helpful pairs, complementary evidence);
    - ``uncertain``: the members pull in opposite directions (a conflict, e.g. a fault
      overriding gold evidence) or their summed effect is within tau of zero.

    Args:
        omega: the pair's interaction.
        psi_i: the first memory's contribution.
        psi_j: the second memory's contribution.
        tau: the harm tolerance.

    Returns:
        The pair's label.
    """
    if abs(omega) <= tau:
        return "additive"
    effect = psi_i + psi_j
    if psi_i * psi_j < 0 or abs(effect) <= tau:
        return "uncertain"
    return "redundant" if omega * effect < 0 else "joint"
