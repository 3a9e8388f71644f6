"""Leave-one-out screening (Eq. 7) and its kappa labels.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 7.
"""

from __future__ import annotations

from typing import Literal

from .game import Coalition, CoalitionGame, without

__all__ = ["LooLabel", "loo_coalitions", "loo_effects", "loo_label", "measured_loo_effects"]

LooLabel = Literal["harmful", "inconclusive", "beneficial"]


def loo_coalitions(k: int) -> list[Coalition]:
    """M and every M minus {m_i}.

    Args:
        k: the number of memories.

    Returns:
        M, then M minus each memory in position order.
    """
    full = (1 << k) - 1
    return [full, *(without(full, i) for i in range(k))]


def loo_effects(game: CoalitionGame) -> list[float]:
    """d_i = v^(M) - v^(M minus {m_i}) (Eq. 7).

    Args:
        game: the table with M and every leave-one-out evaluated.

    Returns:
        d_i by position.
    """
    whole = game.full  # built once: M is K bits wide
    base = game.value(whole)
    return [base - game.value(whole ^ (1 << i)) for i in range(game.k)]


def measured_loo_effects(game: CoalitionGame) -> list[float | None]:
    """The measured leave-one-out effects d_i (Eq. 7).

    d_i for every memory whose leave-one-out coalition was evaluated, else None (hierarchical
    attribution evaluates M minus {m_i} only for the memories it screens).

    Args:
        game: the coalition table.

    Returns:
        d_i by position, None where M minus m_i was not evaluated.
    """
    whole = game.full  # built once: M is K bits wide
    base = game.value(whole)
    scores = game.scores
    out: list[float | None] = []
    for i in range(game.k):
        trial_scores = scores.get(whole ^ (1 << i))
        out.append(base - sum(trial_scores) / len(trial_scores) if trial_scores else None)
    return out


def loo_label(effect: float, kappa: float) -> LooLabel:
    """d_i < -kappa: local evidence of harm; |d_i| <= kappa: inconclusive; else beneficial.

    Args:
        effect: d_i.
        kappa: the screening tolerance.

    Returns:
        ``"harmful"``, ``"inconclusive"`` or ``"beneficial"``.
    """
    if effect < -kappa:
        return "harmful"
    if effect > kappa:
        return "beneficial"
    return "inconclusive"
