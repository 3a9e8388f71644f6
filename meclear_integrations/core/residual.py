"""Residual evidence: whether a larger admissible clearance is worth its extra deletions.

Under a noisy judge or a sampled reader, Eq. 20 on evidence (``core.verification.sequential``) keeps
the smaller of two admissible candidates C within C' unless C' *verifiably* gains more
from the trials of M minus C and M minus C' alone. With a dozen trials each that test
rarely fires, so when two memories share a harm (a joint pair whose remaining member
still pulls the answer away) the clearance keeps one of them.

The coalition table holds more evidence than those two contexts. Let D = C' minus C
(the extra deletions). In the *residual game* on M minus C, every evaluated coalition
S within M minus C that holds D has a partner S minus D; each pair is one measurement
of D's marginal effect v(S minus D) - v(S) with C already cleared (Eq. 18's gain,
restricted to the contexts the cleared memories are out of). Exact enumeration (Eq. 3)
puts all 2^(K - |C|) coalitions of the residual game in the table, so the pairs cost
no model call. The verification trials of M minus C and M minus C' are the pair with
the most trials.

:func:`residual_z` pools the pairs: a precision-weighted mean of the differences
(weight n_a n_b / (n_a + n_b) for n_a and n_b trials), with a binomial standard error
from the pooled pass rate (clipped to [0.05, 0.95]). :func:`promote` moves Eq. 20's
choice from C to the first admissible C' containing it whose value is higher and whose
extra deletions have a residual z above the threshold, and repeats from there. A
background memory has no effect in the residual game, so its z stays near zero; every
C' is still admissible (verified recovery and a verified gain over M), so Theorem 2's
non-degradation and recovery still hold. When the extra deletions are all memories the
answers in the table back as harmful (``core.answer_flags``), the move may use a lower
threshold (``backed_z``): the answers already say what D claims, the residual z only has
to confirm that removing it helps.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 3, 18-20.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .game import Coalition, CoalitionGame

__all__ = ["promote", "residual_z"]

_RATE_CLIP = 0.05


def residual_z(game: CoalitionGame, kept: Coalition, extra: Coalition) -> float:
    """The z-score of the harm of the memories ``extra`` in the residual game on ``kept``.

    Args:
        game: the coalition table.
        kept: M minus C, the context the smaller clearance keeps (a bitmask).
        extra: D, the extra deletions of the larger clearance (a bitmask within ``kept``).

    Returns:
        The pooled mean of v(S minus D) - v(S) over the evaluated pairs S within ``kept``
        holding D, divided by its standard error; 0.0 when no pair is evaluated.
        Positive: the context is better without D.
    """
    num = weights = passes = trials = 0.0
    for coalition, scores in game.scores.items():
        if not scores or coalition & ~kept or coalition & extra != extra:
            continue
        partner = game.scores.get(coalition & ~extra)
        if not partner:
            continue
        n_with, n_without = len(scores), len(partner)
        weight = n_with * n_without / (n_with + n_without)
        num += weight * (sum(partner) / n_without - sum(scores) / n_with)
        weights += weight
        passes += sum(scores) + sum(partner)
        trials += n_with + n_without
    if weights <= 0.0:
        return 0.0
    rate = min(max(passes / trials, _RATE_CLIP), 1.0 - _RATE_CLIP)
    return (num / weights) / math.sqrt(rate * (1.0 - rate) / weights)


def promote(
    game: CoalitionGame,
    coalitions: Sequence[Coalition],
    selected: int,
    admissible: Sequence[bool],
    z: float,
    backed: Coalition = 0,
    backed_z: float | None = None,
) -> int:
    """Eq. 20's choice moved to a larger admissible clearance the residual evidence backs.

    Args:
        game: the coalition table with the candidates verified.
        coalitions: M minus C_j for each candidate, M first.
        selected: the index Eq. 20 selected on the candidates' own evidence.
        admissible: Eq. 19's verdict per candidate.
        z: the residual z a move needs (:func:`residual_z`).
        backed: memories other evidence already backs as harmful (a bitmask; the
            answers in the table, ``core.answer_flags``).
        backed_z: the residual z a move needs when its extra deletions all lie within
            ``backed`` (None: ``z`` for every move).

    Returns:
        The index finally selected (``selected`` when nothing moves it; never 0 when
        ``selected`` is not).
    """
    if selected == 0:
        return 0
    moved = True
    while moved:
        moved = False
        kept = coalitions[selected]
        value = game.value(kept)
        for j in range(selected + 1, len(coalitions)):
            smaller = coalitions[j]
            if not admissible[j] or smaller == kept or smaller & ~kept:
                continue
            if game.value(smaller) <= value + 1e-12:
                continue
            extra = kept & ~smaller
            needed = z if backed_z is None or extra & ~backed else backed_z
            if residual_z(game, kept, extra) > needed:
                selected, moved = j, True
                break
    return selected
