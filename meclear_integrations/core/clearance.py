"""Verified query-scoped clearance (Eq. 14, 16-20; Theorem 2)."""

from __future__ import annotations

from collections.abc import Sequence

from .coalitions import Coalition, without
from .game import CoalitionGame

__all__ = ["harmful_positions", "nested_candidates", "select_candidate"]

GAIN_TIE_TOLERANCE = 1e-12


def harmful_positions(psi: Sequence[float], tau: float) -> list[int]:
    """H^ = {i : psi_i < -tau} (Eq. 14), ordered most negative first (Eq. 16).

    Ties keep retrieval order, so the order is deterministic.
    """
    harmful = [i for i, value in enumerate(psi) if value < -tau]
    return sorted(harmful, key=lambda i: (psi[i], i))


def nested_candidates(priority: Sequence[int]) -> list[list[int]]:
    """C_j = {sigma(1), ..., sigma(j)} for j = 0..h (Eq. 17)."""
    return [list(priority[:j]) for j in range(len(priority) + 1)]


def candidate_coalition(k: int, cleared: Sequence[int]) -> Coalition:
    """M minus C_j."""
    return without((1 << k) - 1, *cleared)


def select_candidate(
    game: CoalitionGame, candidates: Sequence[Sequence[int]], threshold: float
) -> tuple[int, list[float], list[bool], list[bool]]:
    """Eq. 18-20: gains, recovery, admissibility, and j^ = min argmax_{j in J} g(j).

    Returns (selected j, gains, recovered flags, admissible flags).
    """
    base = game.value(game.full)
    gains: list[float] = []
    recovered: list[bool] = []
    admissible: list[bool] = []
    for j, cleared in enumerate(candidates):
        coalition = candidate_coalition(game.k, cleared)
        gain = game.value(coalition) - base
        ok = game.recovers(coalition, threshold)
        gains.append(gain)
        recovered.append(ok)
        admissible.append(j == 0 or (gain > GAIN_TIE_TOLERANCE and ok))
    best = max(g for g, a in zip(gains, admissible, strict=True) if a)
    selected = min(
        j
        for j, (g, a) in enumerate(zip(gains, admissible, strict=True))
        if a and g >= best - GAIN_TIE_TOLERANCE
    )
    return selected, gains, recovered, admissible
