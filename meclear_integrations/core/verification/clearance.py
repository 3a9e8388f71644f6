"""Verified query-scoped clearance (Eq. 4-5, 14, 16-20; Theorem 2).

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 4-5, 14, 16-20.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from ..coalitions import Coalition, without
from ..game import CoalitionGame
from .sequential import Selection

__all__ = [
    "candidate_coalition",
    "fallback_candidates",
    "harmful_positions",
    "minimal_candidates",
    "nested_candidates",
    "select_candidate",
]

GAIN_TIE_TOLERANCE = 1e-12


def harmful_positions(
    psi: Sequence[float], tau: float, upper: Sequence[float] | None = None
) -> list[int]:
    """H^ = {i : psi_i < -tau} (Eq. 14), ordered most negative first (Eq. 16).

    With ``upper`` (the upper ends of the per-memory intervals) a memory must also have an
    interval clear of zero, upper_i < 0: a sampled estimate that could be 0 is not flagged.
    For exact enumeration the intervals are points, so this is Eq. 14 unchanged.
    Ties keep retrieval order, so the order is deterministic.

    Args:
        psi: contributions by position.
        tau: the harm tolerance.
        upper: upper ends of the intervals (None: Eq. 14 as is).

    Returns:
        H^, most negative first.
    """
    harmful = [
        i for i, value in enumerate(psi) if value < -tau and (upper is None or upper[i] < 0.0)
    ]
    return sorted(harmful, key=lambda i: (psi[i], i))


def nested_candidates(priority: Sequence[int]) -> list[list[int]]:
    """C_j = {sigma(1), ..., sigma(j)} for j = 0..h (Eq. 17).

    Args:
        priority: H^ in the order of Eq. 16.

    Returns:
        The candidates C_0 = [], C_1, ..., C_h.
    """
    return [list(priority[:j]) for j in range(len(priority) + 1)]


def fallback_candidates(core: Sequence[int], fallback: Sequence[int]) -> list[list[int]]:
    """The fallback candidates: H^ plus the fallback memories, nested.

    Core + {f(1), ..., f(j)} for j = 1..|fallback|: the nested family (Eq. 17)
    continued past the interval-confirmed set H^ into the memories that pass Eq. 14's
    threshold but whose interval still reaches zero (``fallback``, most negative first).

    Appended after the nested candidates, so Eq. 20's smallest-index tie-break prefers a
    clearance inside H^; a fallback candidate is selected only when it verifiably gains
    more than every candidate inside H^.

    Args:
        core: H^ in the order of Eq. 16.
        fallback: the fallback memories, most negative first.

    Returns:
        One candidate per fallback memory.
    """
    return [[*core, *fallback[:j]] for j in range(1, len(fallback) + 1)]


def minimal_candidates(priority: Sequence[int], psi: Sequence[float]) -> list[list[int]]:
    """Every subset C of H^ (the search space of Eq. 4-5), smallest first.

    Within a size, the subset with the most negative summed contribution comes first, then
    the one earliest in the priority order; members are listed in priority order. Applying
    Eq. 18-20 to this family (min index among maximum-gain admissible candidates) gives a
    minimum-cardinality maximiser of the verified gain over all subsets of H^ (Eq. 5).

    Args:
        priority: H^ in the order of Eq. 16.
        psi: contributions by position.

    Returns:
        Every subset of H^, the empty one first.
    """
    rank = {p: r for r, p in enumerate(priority)}
    out: list[list[int]] = []
    for size in range(len(priority) + 1):
        family = [list(c) for c in combinations(priority, size)]
        family.sort(key=lambda c: (sum(psi[i] for i in c), [rank[i] for i in c]))
        out.extend(family)
    return out


def candidate_coalition(k: int, cleared: Sequence[int]) -> Coalition:
    """M minus C_j.

    Args:
        k: the number of memories.
        cleared: positions of C_j.

    Returns:
        The coalition M minus C_j.
    """
    return without((1 << k) - 1, *cleared)


def select_candidate(
    game: CoalitionGame,
    candidates: Sequence[Sequence[int]],
    threshold: float,
    trials: int | None = None,
) -> Selection:
    """Eq. 18-20: gains, recovery, admissibility, and j^ = min argmax_{j in J} g(j).

    A candidate counts as recovered only when it has at least ``trials`` trials (T by
    default) and every one passes ``threshold``.

    Args:
        game: the coalition table with the candidates verified.
        candidates: cleared positions of each candidate, C_0 = [] first.
        threshold: the recovery predicate's score threshold.
        trials: trials a candidate needs (None: T).

    Returns:
        The selection (never ``undecided``: the paper's rule has no abstention).
    """
    need = game.trials if trials is None else trials
    base = game.value(game.full)
    gains: list[float] = []
    recovered: list[bool] = []
    admissible: list[bool] = []
    for j, cleared in enumerate(candidates):
        coalition = candidate_coalition(game.k, cleared)
        gain = game.value(coalition) - base
        ok = game.trials_of(coalition) >= need and game.recovers(coalition, threshold)
        gains.append(gain)
        recovered.append(ok)
        admissible.append(j == 0 or (gain > GAIN_TIE_TOLERANCE and ok))
    best = max(g for g, a in zip(gains, admissible, strict=True) if a)
    selected = min(
        j
        for j, (g, a) in enumerate(zip(gains, admissible, strict=True))
        if a and g >= best - GAIN_TIE_TOLERANCE
    )
    return Selection(selected, gains, recovered, admissible, undecided=False)
