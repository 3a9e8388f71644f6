"""The answer-backed flag rule for the surrogate baselines (``core.answer_flags``).

ContextCite and ProxySPEX read the same coalition table MeClear does, answers included
(the agent's answer on every ablation, ``core.answers``). When that table holds every
coalition (2^K at most the ablation budget: K = 5 at B = 32), the rule MeClear's exact
estimator uses applies to their scores unchanged: supporters of a failing answer flagged
together when their scores sum below -tau, an inert memory only when it turns contexts to
a failing answer on balance, any other memory by its score (the surrogates give no
interval: a negative score is "clear of zero"). With a partial table (larger K) or no
answers the method's own rule applies. Reads only answers, never the reference.
"""

from __future__ import annotations

from collections.abc import Sequence

from meclear_integrations.core.answer_flags import answer_backed_flags

from ..oracle import CaseOracle

__all__ = ["answer_backed_order"]


def answer_backed_order(
    oracle: CaseOracle, scores: Sequence[float], tolerance: float, threshold: float
) -> list[int] | None:
    """Flags under the answer-backed rule, most harmful first; None when it cannot apply.

    Args:
        oracle: The case's oracle (its coalition table, answers included).
        scores: The surrogate's score per memory (negative: harmful).
        tolerance: The method's harm tolerance tau.
        threshold: The success threshold of one trial.

    Returns:
        The flagged positions, or None (a partial table, or no usable answers).
    """
    game = oracle.game
    if any(not game.scores.get(c) for c in range(1 << game.k)):
        return None
    values = [float(x) for x in scores]
    return answer_backed_flags(game, values, values, values, tolerance, threshold)
