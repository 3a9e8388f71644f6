"""Answer-backed flags: Eq. 14's interval rule weighed by the answers in the coalition table.

Under a noisy judge or a sampled reader, exact enumeration tries each coalition once, so
psi_i (Eq. 3) carries the noise of 2^(K-1) single-trial differences: a background memory
can land well below -tau and a redundant or joint target, whose share Theorem 1 splits,
close to zero. The intervals of ``core.estimators.exact`` are calibrated on the contexts
tried repeatedly (the full context and the candidates, whose pass rates sit near 0 or 1),
so they do not catch the first case and cannot fix the second.

The table holds more than scores: the answer the agent gave on every coalition
(``core.answers``), the memories alone and no memory included, at no extra call. Let the
*failing answers* be those of the full context's failed trials. Then:

- a **supporter** gives a failing answer alone on every trial: the supporters are flagged
  together when their shares sum below -tau, whatever each one's psi_i (under redundancy
  the harm is split among the copies, Theorem 1, and a single noisy trial per coalition can
  put one copy's share at zero or above);
- an **inert** memory gives, alone, on every trial, what the agent says from no memory:
  it is flagged when psi_i < -tau *and* it turns contexts to a failing answer on balance,
  sum over S in M minus {i} of [f(S u {i}) - f(S)] >= 1 with f the share of a context's
  trials giving a failing answer (a joint harm: a hedged record that needs another one,
  or the gold evidence it overturns); an inert memory with a negative psi and no such
  evidence is noise in the scores, and is tried as a fallback candidate only;
- any other memory keeps the interval rule (psi_i < -tau, interval clear of zero).

Flags only feed Eq. 16-17's candidates, which are verified (Eq. 18-20) like any other, so
Theorem 2 is untouched. When the evaluator reports no answers, or the failing answer is
the no-memory answer, the interval rule is used unchanged.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 3, 14, 16-20.
"""

from __future__ import annotations

from collections.abc import Sequence

from .answers import plain_same
from .game import Coalition, CoalitionGame
from .grouping import failing_answers, silent_answers

__all__ = ["answer_backed", "answer_backed_flags", "failing_share", "net_pivots"]

MIN_NET_PIVOTS = 1.0
"""An inert memory must turn at least one context to a failing answer, on balance."""


def failing_share(
    game: CoalitionGame, coalition: Coalition, answers: Sequence[str]
) -> float | None:
    """The share of a coalition's trials whose answer agrees with one of ``answers``.

    Args:
        game: the coalition table.
        coalition: the coalition (a bitmask).
        answers: the answers looked for.

    Returns:
        The share in [0, 1], or None when the coalition has no trial with a reported answer.
    """
    given = [a for a in game.answers_of(coalition) if a is not None]
    if not given:
        return None
    same = game.same or plain_same
    return sum(1.0 for a in given if any(same(a, h) for h in answers)) / len(given)


def net_pivots(game: CoalitionGame, position: int, answers: Sequence[str]) -> float:
    """How many contexts the memory turns to one of ``answers``, on balance.

    Args:
        game: the coalition table.
        position: the memory's position.
        answers: the answers looked for (the failing ones).

    Returns:
        sum over evaluated pairs (S, S u {i}), S within M minus {i}, of
        f(S u {i}) - f(S) (:func:`failing_share`).
    """
    bit = 1 << position
    net = 0.0
    for coalition in range(1 << game.k):
        if coalition & bit:
            continue
        with_it = failing_share(game, coalition | bit, answers)
        without = failing_share(game, coalition, answers)
        if with_it is not None and without is not None:
            net += with_it - without
    return net


def _every(game: CoalitionGame, coalition: Coalition, answers: Sequence[str]) -> bool:
    """Every trial of ``coalition`` reported an answer agreeing with one of ``answers``."""
    given = game.answers_of(coalition)
    return bool(given) and None not in given and failing_share(game, coalition, answers) == 1.0


def answer_backed_flags(
    game: CoalitionGame,
    psi: Sequence[float],
    lower: Sequence[float],
    upper: Sequence[float],
    tau: float,
    threshold: float,
) -> list[int] | None:
    """H^ under the answer-backed interval rule (module docstring), most harmful first.

    Args:
        game: the coalition table (every coalition evaluated: exact enumeration).
        psi: contributions by position.
        lower: lower ends of their intervals.
        upper: upper ends of their intervals.
        tau: the harm tolerance.
        threshold: the success threshold of one trial.

    Returns:
        H^ ordered as Eq. 16 orders it, or None when the table holds no usable answers
        (the caller keeps the interval rule).
    """
    harmful = failing_answers(game, threshold)
    silent = silent_answers(game)
    same = game.same or plain_same
    if not harmful or not silent or any(same(h, s) for h in harmful for s in silent):
        return None
    supporters = [i for i in range(game.k) if _every(game, 1 << i, harmful)]
    group_share = sum(psi[i] for i in supporters)
    flagged: list[int] = []
    for i, value in enumerate(psi):
        single = 1 << i
        if _every(game, single, harmful):
            if group_share < -tau:
                flagged.append(i)  # a supporter: the copies' shares together exceed tau
        elif value >= -tau:
            continue
        elif _every(game, single, silent):
            if net_pivots(game, i, harmful) >= MIN_NET_PIVOTS:
                flagged.append(i)  # inert alone, harmful jointly
        elif upper[i] < 0.0:
            flagged.append(i)
    return sorted(flagged, key=lambda i: (psi[i], i))


def answer_backed(game: CoalitionGame, threshold: float) -> list[int]:
    """Memories the answers back as harmful, whatever their psi.

    Args:
        game: the coalition table (every coalition evaluated: exact enumeration).
        threshold: the success threshold of one trial.

    Returns:
        The supporters and the inert memories with a net pivot to a failing answer
        (module docstring), in retrieval order; empty when the table holds no usable
        answers.
    """
    harmful = failing_answers(game, threshold)
    silent = silent_answers(game)
    same = game.same or plain_same
    if not harmful or not silent or any(same(h, s) for h in harmful for s in silent):
        return []
    return [
        i
        for i in range(game.k)
        if _every(game, 1 << i, harmful)
        or (_every(game, 1 << i, silent) and net_pivots(game, i, harmful) >= MIN_NET_PIVOTS)
    ]
