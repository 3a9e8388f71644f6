"""The verification rule of a run (Eq. 18-20): the paper's or the sequential one, as one object.

Every stage that verifies a removal, every candidate family and the benchmark's oracle asks
the run's :class:`VerificationRule` (built once per run by :func:`rule_of`) what to evaluate
and what the trials show; none tests the rule's name.

- :class:`PaperRule`: T trials per candidate, recovered when every trial passes, j^ = min
  argmax of the gain (Eq. 18-20 as the paper states them).
- :class:`SequentialRule`: the same equations on evidence that holds when verdicts disagree
  (:class:`~meclear_integrations.core.verification.sequential.SequentialVerifier`).

The candidates a rule verifies come from here too: H^ (Eq. 14, :func:`harmful_positions`),
the candidate families (the nested C_j of Eq. 16-17, the fallback continuation, every subset
of H^ for Eq. 4-5) and M minus C_j (:func:`candidate_coalition`); :func:`select_candidate`
is Eq. 18-20 on unanimous trials, the paper rule's selection.

An operation that needs trials is a generator of :data:`Batch` values (what to evaluate: the
drivers evaluate each batch before resuming it) that returns its decision; a stage wraps it
with ``core.stages.steps.evaluated``, the oracle runs the batches itself.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 4-5, 14, 16-20; Theorem 2.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from itertools import combinations
from typing import Protocol, TypeVar

from ..config import ClearanceConfig, RuleName
from ..game import Coalition, CoalitionGame, without
from .sequential import Selection, SequentialVerifier

__all__ = [
    "RULES",
    "Batch",
    "PaperRule",
    "SequentialRule",
    "Trials",
    "VerificationRule",
    "candidate_coalition",
    "fallback_candidates",
    "harmful_positions",
    "minimal_candidates",
    "nested_candidates",
    "rule_of",
    "select_candidate",
    "verifier",
]

T = TypeVar("T")

GAIN_TIE_TOLERANCE = 1e-12

Batch = list[tuple[Coalition, int]]
"""(coalition, trials it must have) pairs, evaluated as one batch."""

Trials = Generator[Batch, None, T]
"""A rule's operation: yields the batches it needs evaluated, returns its decision."""


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


class VerificationRule(Protocol):
    """What the stages ask of the run's verification rule (Eq. 18-20)."""

    @property
    def interval_evidence(self) -> bool:
        """Whether a candidate's value is read with its evidence (bounds on the trials).

        The residual add-ons (``core.residual``) move or extend Eq. 20's choice on that
        evidence and are off under a rule without it.
        """
        ...

    def recovers(self, game: CoalitionGame, coalition: Coalition) -> bool:
        """The recovery predicate nu(S): every trial of ``coalition`` so far passes (Eq. 19)."""
        ...

    def exit_test(self, game: CoalitionGame) -> Trials[bool]:
        """Evaluate M; True when Eq. 20 would select C_0 whatever the candidates."""
        ...

    def verify(self, game: CoalitionGame, coalitions: Sequence[Coalition]) -> Trials[None]:
        """Evaluate the candidates M minus C_j (``coalitions``, M first) for Eq. 18-19."""
        ...

    def verify_staged(
        self, game: CoalitionGame, candidates: Sequence[Sequence[int]], core: int
    ) -> Trials[int]:
        """Verify the candidates, the ones after ``core`` only when they can matter.

        Returns:
            How many candidates (from the first) were verified and stay in the family.
        """
        ...

    def select(self, game: CoalitionGame, candidates: Sequence[Sequence[int]]) -> Selection:
        """Eq. 18-20 over the verified candidates (cleared positions, C_0 = [] first)."""
        ...

    def settle_close(
        self, game: CoalitionGame, candidates: Sequence[Sequence[int]], at_most: int
    ) -> Trials[Selection]:
        """More trials, up to ``at_most``, where verdicts are close; then Eq. 18-20.

        ``Verification.close_trials``: call after :meth:`verify` (the candidates verified).
        """
        ...

    def removal(
        self, game: CoalitionGame, cleared: Sequence[int], trials_first: bool = False
    ) -> Trials[Selection]:
        """Verify M minus ``cleared`` against M; Eq. 20 over [C_0, ``cleared``].

        ``trials_first``: T trials of the candidate before anything else (a put-back that
        fails is settled there).
        """
        ...

    def final_recovered(
        self, game: CoalitionGame, selection: Selection, cleared: Sequence[int]
    ) -> bool:
        """Whether the selected clearance ``cleared`` counts as recovered in the report."""
        ...

    def at_rate(self, rate: float | None) -> VerificationRule:
        """The rule with another recovery rate for Eq. 19 (None: this rule)."""
        ...


def verifier(config: ClearanceConfig) -> SequentialVerifier:
    """The sequential verifier of ``config`` (its trials, thresholds and rates).

    Args:
        config: the run's settings (``trials`` and ``verification``).

    Returns:
        The verifier.
    """
    return SequentialVerifier(
        trials=config.trials,
        max_trials=config.verification.max_trials,
        success_threshold=config.verification.success_threshold,
        recovery_rate=config.verification.recovery_rate,
        delta=config.verification.delta,
        exit_rate=config.verification.exit_rate,
    )


class PaperRule:
    """The paper's rule: T trials, recovered when every one passes, Eq. 20's min argmax.

    Args:
        trials: T.
        threshold: the score a trial must reach (the recovery predicate nu).
        adaptive: ``adaptive_trials``: a candidate that failed its one attribution trial
            gets no more (it cannot be admissible), and no candidate after one that
            already recovers at the maximum value gets trials (:meth:`verify`).
    """

    interval_evidence = False

    def __init__(self, *, trials: int, threshold: float, adaptive: bool) -> None:
        self.trials = trials
        self.threshold = threshold
        self.adaptive = adaptive

    @classmethod
    def from_config(cls, config: ClearanceConfig, adaptive: bool | None = None) -> PaperRule:
        """The rule of ``config`` (``adaptive`` None: ``config.adaptive_trials``)."""
        return cls(
            trials=config.trials,
            threshold=config.verification.success_threshold,
            adaptive=config.adaptive_trials if adaptive is None else adaptive,
        )

    def recovers(self, game: CoalitionGame, coalition: Coalition) -> bool:
        """The recovery predicate nu(S): every trial of ``coalition`` so far passes."""
        return game.recovers(coalition, self.threshold)

    def exit_test(self, game: CoalitionGame) -> Trials[bool]:
        """T trials of M; exit when it recovers at the maximum value 1."""
        everything = game.full
        yield [(everything, self.trials)]
        return (
            game.recovers(everything, self.threshold)
            and game.value(everything) >= 1.0 - GAIN_TIE_TOLERANCE
        )

    def verify(self, game: CoalitionGame, coalitions: Sequence[Coalition]) -> Trials[None]:
        """T trials per candidate; with adaptive trials, only where Eq. 20 can still use them.

        Without adaptive trials every candidate gets T trials in one batch. With them,
        candidates not yet in the table get all T trials at once (the decision is made on
        them, and a later round would cost a model round-trip), while those that
        attribution already evaluated once get the remaining T - 1 trials only if that
        trial passed the recovery threshold (otherwise they cannot be admissible). The
        first such candidate (in the order of Eq. 20's tie-break) gets them in the same
        batch as the new candidates: it is the one Eq. 20 needs next unless a new
        candidate before it recovers at 1.0, and evaluating it there saves a round-trip for
        at most T - 1 extra calls. Then the next open candidate (first trial passed, fewer
        than T trials) gets its trials alone and, unless it recovers at the maximum
        possible value 1.0, the remaining open ones go in one further batch. A candidate
        after one that already recovers at 1.0 can never be selected (Eq. 20 breaks ties
        by the smaller index), so it gets no further trials; Eq. 20's choice is unchanged
        by any of this.
        """
        need = self.trials
        if not self.adaptive:
            yield [(c, need) for c in coalitions]
            return None
        fresh = [c for c in coalitions if game.trials_of(c) == 0]
        known = [
            c
            for c in coalitions[1:]
            if 0 < game.trials_of(c) < need and game.recovers(c, self.threshold)
        ]
        yield [(c, need) for c in fresh + known[:1]] + [(c, 1) for c in coalitions]

        def settled_best(c: Coalition) -> bool:
            return (
                game.trials_of(c) >= need
                and game.recovers(c, self.threshold)
                and game.value(c) >= 1.0 - GAIN_TIE_TOLERANCE
            )

        open_ = []
        for c in coalitions[1:]:
            if settled_best(c):
                break  # nothing after it can be selected
            if game.trials_of(c) < need and game.recovers(c, self.threshold):
                open_.append(c)
        if not open_:
            return None
        first = open_[0]
        yield [(first, need)]
        if settled_best(first):
            return None
        yield [(c, need) for c in open_[1:]]
        return None

    def verify_staged(
        self, game: CoalitionGame, candidates: Sequence[Sequence[int]], core: int
    ) -> Trials[int]:
        """Every candidate verified (:meth:`verify`): a fallback one may always matter."""
        yield from self.verify(game, [candidate_coalition(game.k, c) for c in candidates])
        return len(candidates)

    def select(self, game: CoalitionGame, candidates: Sequence[Sequence[int]]) -> Selection:
        """Eq. 18-20 (:func:`select_candidate`); never undecided."""
        return select_candidate(game, candidates, self.threshold)

    def settle_close(
        self, game: CoalitionGame, candidates: Sequence[Sequence[int]], at_most: int
    ) -> Trials[Selection]:
        """Eq. 18-20 as they stand: the paper's rule decides on T trials, nothing is close."""
        yield from ()
        return self.select(game, candidates)

    def removal(
        self, game: CoalitionGame, cleared: Sequence[int], trials_first: bool = False
    ) -> Trials[Selection]:
        """T trials of M and of M minus ``cleared``, then Eq. 18-20 over the two."""
        yield [(game.full, self.trials), (candidate_coalition(game.k, cleared), self.trials)]
        return select_candidate(game, [[], cleared], self.threshold)

    def final_recovered(
        self, game: CoalitionGame, selection: Selection, cleared: Sequence[int]
    ) -> bool:
        """The recovery predicate nu of the selected context on its trials (C_0 included)."""
        return game.recovers(candidate_coalition(game.k, cleared), self.threshold)

    def at_rate(self, rate: float | None) -> PaperRule:
        """This rule: it verifies on unanimous trials, not on a pass rate."""
        return self


class SequentialRule:
    """The sequential rule (``verification.sequential``): Eq. 18-20 on evidence, trials in rounds.

    Args:
        config: the run's settings (``trials`` and ``verification``).
    """

    interval_evidence = True

    def __init__(self, config: ClearanceConfig) -> None:
        self.config = config
        self.verifier = verifier(config)

    @classmethod
    def from_config(cls, config: ClearanceConfig, adaptive: bool | None = None) -> SequentialRule:
        """The rule of ``config`` (``adaptive`` is the paper rule's: unused here)."""
        return cls(config)

    def recovers(self, game: CoalitionGame, coalition: Coalition) -> bool:
        """The recovery predicate nu(S): every trial of ``coalition`` so far passes."""
        return game.recovers(coalition, self.verifier.threshold)

    def exit_test(self, game: CoalitionGame) -> Trials[bool]:
        """The full context's trials until it verifiably recovers with no possible gain."""
        while plan := self.verifier.exit_plan(game):
            yield plan
        return self.verifier.exits(game)

    def verify(self, game: CoalitionGame, coalitions: Sequence[Coalition]) -> Trials[None]:
        """What :meth:`SequentialVerifier.plan` asks for, round by round."""
        while plan := self.verifier.plan(game, coalitions):
            yield plan
        return None

    def verify_staged(
        self, game: CoalitionGame, candidates: Sequence[Sequence[int]], core: int
    ) -> Trials[int]:
        """The first ``core`` candidates, then the fallback family only when it can matter.

        In a quiet run (every context's trials agree), once a nested/minimal candidate is
        admissible at the maximum value 1, no fallback candidate (a superset, later in Eq.
        20's order) can be selected, so the fallback family is neither verified nor
        reported: it would only tie and cost trials. In a noisy run the whole family is
        verified.
        """
        k = game.k
        coalitions = [candidate_coalition(k, c) for c in candidates]
        if core == len(candidates):
            yield from self.verify(game, coalitions)
            return len(candidates)
        yield from self.verify(game, coalitions[:core])
        selected = self.select(game, candidates[:core]).selected
        if (
            selected > 0
            and not SequentialVerifier.noisy(game)
            and game.value(coalitions[selected]) >= 1.0 - GAIN_TIE_TOLERANCE
        ):
            return core
        yield from self.verify(game, coalitions)
        return len(candidates)

    def select(self, game: CoalitionGame, candidates: Sequence[Sequence[int]]) -> Selection:
        """Eq. 18-20 on the evidence (:meth:`SequentialVerifier.select`)."""
        coalitions = [candidate_coalition(game.k, c) for c in candidates]
        return self.verifier.select(game, coalitions)

    def settle_close(
        self, game: CoalitionGame, candidates: Sequence[Sequence[int]], at_most: int
    ) -> Trials[Selection]:
        """What :meth:`SequentialVerifier.close_plan` asks for, round by round; then Eq. 18-20."""
        coalitions = [candidate_coalition(game.k, c) for c in candidates]
        while plan := self.verifier.close_plan(game, coalitions, at_most):
            yield plan
        return self.verifier.select(game, coalitions)

    def removal(
        self, game: CoalitionGame, cleared: Sequence[int], trials_first: bool = False
    ) -> Trials[Selection]:
        """The rule's rounds over M and M minus ``cleared``, then Eq. 18-20."""
        pair = [game.full, candidate_coalition(game.k, cleared)]
        if trials_first and game.trials_of(pair[1]) < self.verifier.trials:
            yield [(pair[1], self.verifier.trials)]
        while plan := self.verifier.plan(game, pair):
            yield plan
        return self.verifier.select(game, pair)

    def final_recovered(
        self, game: CoalitionGame, selection: Selection, cleared: Sequence[int]
    ) -> bool:
        """The selected candidate verifiably recovers (Eq. 19's predicate, sequential)."""
        return selection.recovered[selection.selected]

    def at_rate(self, rate: float | None) -> SequentialRule:
        """The rule verifying recovery at pass rate ``rate`` (None: this rule)."""
        if rate is None:
            return self
        return SequentialRule(self.config.updated(verification={"recovery_rate": rate}))


RULES: dict[RuleName, type[PaperRule] | type[SequentialRule]] = {
    "paper": PaperRule,
    "sequential": SequentialRule,
}
"""The rule of each ``Verification.rule`` name."""


def rule_of(config: ClearanceConfig, *, adaptive: bool | None = None) -> VerificationRule:
    """The verification rule ``config`` names (``config.verification.rule``).

    Args:
        config: the run's settings.
        adaptive: the paper rule's adaptive trials (None: ``config.adaptive_trials``).

    Returns:
        The rule, built from :data:`RULES`.
    """
    return RULES[config.verification.rule].from_config(config, adaptive)
