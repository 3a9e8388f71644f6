"""Escalation: a targeted subset search when no clearance candidate verifies.

Eq. 14 flags a memory when psi_i < -tau, but r redundant copies of one stale claim share
the harm: with one supporting memory each copy has psi = -1 / (r (r + 1)) (-0.083 for
three copies, -0.033 for five), at or inside the tolerance, and a sampled estimate of it
can land anywhere near zero. The nested candidates (Eq. 17) then never clear every copy.
When no non-empty candidate is admissible, the search below looks among the memories an
estimator singled out by a direct test (the hierarchical estimator's suspects) and those
with a negative estimated contribution (the *pool*, most negative first, at most
``pool_size``):

1. **Widen**: evaluate M minus the whole pool (one trial). If it does not pass the
   recovery predicate and the contributions were sampled, widen once more to every memory
   whose contribution is below +tau (everything not clearly supporting the answer, at
   most twice ``pool_size``: a sampled estimate can put a copy at or above zero); if that
   fails too, stop.
2. **Shrink in parallel**: for every pool member, evaluate M minus (pool minus it), i.e.
   put it back alone (one batch). Members whose return breaks recovery are *needed*;
   M minus needed is evaluated (one trial).
3. **Shrink one by one** (only when the parallel shrink does not recover, e.g. joint harm:
   each partner alone is harmless once the other is gone): put members back one at a
   time, least negative first, keeping each return that still recovers.

Every set found is returned as a candidate (smallest first; the engine drops a candidate
that would clear every memory: an answer from an empty context says nothing about which
memories misled it) for the engine's verification
(Eq. 18-19: T trials) and selection (Eq. 20). The search only proposes: nothing is cleared
unless it is verified, so Theorem 2 holds for these candidates as for the nested ones.
Search tests use one trial each; the ranking only orders the search.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 14, 17-20.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Sequence

from .game import Coalition, CoalitionGame
from .verification.rule import candidate_coalition

__all__ = ["EscalationSearch", "escalation_candidates", "escalation_pool", "wide_pool"]

Batch = list[tuple[Coalition, int]]
EscalationSearch = Generator[Batch, None, list[list[int]]]
"""Yields batches of (coalition, trials) to evaluate; returns the candidates found."""


def escalation_pool(
    psi: Sequence[float], pool_size: int, suspects: Sequence[int] = ()
) -> list[int]:
    """The memories escalation searches: the suspects, then negative contributions.

    ``suspects`` (memories an estimator singled out as harmful by a direct test, e.g. the
    hierarchical estimator's screening), then the other positions with psi_i < 0; each
    part most negative first (ties by position), at most ``pool_size`` in all.

    Args:
        psi: contributions by position.
        pool_size: the most memories searched.
        suspects: positions an estimator singled out.

    Returns:
        The pool, in priority order.
    """
    return _pool(psi, pool_size, suspects, 0.0)


def wide_pool(
    psi: Sequence[float], pool_size: int, suspects: Sequence[int], tau: float
) -> list[int]:
    """As :func:`escalation_pool` with every psi_i < tau, at most ``pool_size``.

    Args:
        psi: contributions by position.
        pool_size: the most memories searched.
        suspects: positions an estimator singled out.
        tau: the harm tolerance.

    Returns:
        The pool, in priority order.
    """
    return _pool(psi, pool_size, suspects, tau)


def _pool(psi: Sequence[float], size: int, suspects: Sequence[int], below: float) -> list[int]:
    def order(positions: Iterable[int]) -> list[int]:
        return sorted(positions, key=lambda i: (psi[i], i))

    singled = set(suspects)
    first = order(singled)
    rest = order(i for i, v in enumerate(psi) if v < below and i not in singled)
    return (first + rest)[:size]


def escalation_candidates(
    game: CoalitionGame, pools: Sequence[Sequence[int]], recovers: Callable[[Coalition], bool]
) -> EscalationSearch:
    """The escalation search as a generator of batches (module docstring).

    The search of the module docstring: the first of ``pools`` (positions in priority
    order, each wider than the last) whose removal recovers is shrunk.

    Args:
        game: the coalition table.
        pools: pools in priority order, each wider than the last.
        recovers: the recovery predicate nu on a context's trials so far (the run's
            verification rule's, ``VerificationRule.recovers``).

    Returns:
        A generator that yields batches to evaluate and returns the candidates found.
    """
    k = game.k

    def passes(cleared: Sequence[int]) -> bool:
        return recovers(candidate_coalition(k, cleared))

    pool: list[int] = []
    for option in pools:
        if not option or len(option) <= len(pool):
            continue
        yield [(candidate_coalition(k, option), 1)]
        if passes(option):
            pool = list(option)
            break
    if not pool:
        return []
    found = [pool]
    if len(pool) == 1:
        return found
    returns = {j: [i for i in pool if i != j] for j in pool}
    yield [(candidate_coalition(k, rest), 1) for rest in returns.values()]
    needed = [j for j in pool if not passes(returns[j])]
    if needed == pool:
        return found
    if needed:
        yield [(candidate_coalition(k, needed), 1)]
        if passes(needed):
            return [needed, pool]
    current = list(pool)
    for j in reversed(pool):
        rest = [i for i in current if i != j]
        if not rest:
            continue
        yield [(candidate_coalition(k, rest), 1)]
        if passes(rest):
            current = rest
    if current != pool:
        found.insert(0, current)
    return found
