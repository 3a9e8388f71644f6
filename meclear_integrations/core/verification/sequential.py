"""Sequential verified clearance: Eq. 18-20 when verdicts may disagree between trials.

The paper verifies a candidate on T trials (recovered: every trial passes) and picks
j^ = min argmax of the gain (Eq. 20). With a sampled agent or a noisy judge, two passing
trials prove little: a context that is right 40% of the time passes twice one time in
six, so the full context "recovers" by luck and the smallest candidate wins ties it only
won by luck. :class:`SequentialVerifier` keeps Eq. 18-20 and decides on evidence instead:

- **Recovered** (Eq. 19's predicate, sequential): a context verifiably recovers when the
  one-sided Clopper-Pearson lower bound (level ``Verification.delta``) on its pass rate,
  P(score >= success_threshold), is at least ``recovery_rate``; with rate 1/2 and delta
  0.1 that takes four passes in four trials. It verifiably does not when even passing
  every trial up to ``max_trials`` could not get it there.
- **Quiet and noisy runs.** While every context's trials agree, values are exact and the
  gain is the paper's (Eq. 18). Once any context's trials disagree the run is noisy, and
  a value is an interval (Clopper-Pearson on the mean score): a gain counts only when
  the candidate's lower bound exceeds the full context's upper bound.
- **Admissible** (Eq. 19): j = 0, or the candidate verifiably recovers with a (verified)
  positive gain. **Selected** (Eq. 20): the smallest admissible index that no admissible
  candidate is verifiably better than; with exact values (a quiet run) that is the
  smallest index of maximum value, the paper's choice, and under noise a larger
  clearance wins only when it verifiably gains more.
- **More trials where outcomes are open**: candidates get T trials, then those that may
  still be selected get trials up to the recovery test (and in a noisy run up to
  ``max_trials``) in rounds; when a larger admissible candidate ties with the selected
  one, both get ``max_trials`` trials before the tie is broken by index (a lucky tie is
  how a partial clearance wins under noise). With a deterministic model and the
  package's answer cache the extra trials cost no model call.
- **Early exit**: only when the full context verifiably recovers and no candidate could
  show a gain over it (its value is already 1 in a quiet run), so Eq. 20 would select
  C_0 anyway; with success_threshold < 1 a recovered context scoring below 1 is cleared
  as Eq. 20 says.
- **Abstain**: when nothing is admissible, the full context does not verifiably recover,
  and a candidate that looks better than it still has disagreeing verdicts that neither
  verify its recovery (within ``max_trials``) nor rule it out (its pass rate's upper
  bound is still above ``recovery_rate``), the run cannot verify either way:
  ``undecided``, and the engine abstains.

Theorem 2 holds for the estimates: the selected context's value is at least the full
context's (a non-empty clearance verifiably gains), a non-empty clearance verifiably
recovers, and no smaller admissible candidate is as good (verifiably, under noise).

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 2, 18-20.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from ..game import Coalition, CoalitionGame

__all__ = [
    "CandidateEvidence",
    "Selection",
    "SequentialVerifier",
    "clopper_pearson",
    "trials_to_verify",
]

Recovery = Literal["yes", "no", "open"]
GAIN_TOLERANCE = 1e-12


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-14:
            break
    return h


def _beta_cdf(x: float, a: float, b: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def _beta_quantile(p: float, a: float, b: float) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if _beta_cdf(mid, a, b) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@lru_cache(maxsize=4096)
def clopper_pearson(successes: float, n: int, delta: float) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds on a pass rate.

    One-sided Clopper-Pearson bounds (lower, upper), each at level ``delta``, on a
    success rate from ``successes`` out of ``n`` trials. A fractional ``successes`` (the
    sum of scores in [0, 1]) uses the same beta quantiles.

    Args:
        successes: passes (may be fractional: a mean score times n).
        n: trials.
        delta: the level of each bound.

    Returns:
        (lower, upper).
    """
    if n <= 0:
        return 0.0, 1.0
    s = min(max(float(successes), 0.0), float(n))
    lower = 0.0 if s <= 0 else _beta_quantile(delta, s, n - s + 1.0)
    upper = 1.0 if s >= n else _beta_quantile(1.0 - delta, s + 1.0, n - s)
    return lower, upper


def trials_to_verify(rate: float, delta: float, at_most: int) -> int:
    """Passing trials in a row needed to verify a pass rate of ``rate``.

    Passing trials in a row needed for the pass-rate lower bound to reach ``rate``
    (``at_most`` + 1 when ``at_most`` trials cannot get there).

    Args:
        rate: the pass rate to verify.
        delta: the level of the lower bound.
        at_most: the most trials allowed.

    Returns:
        The number of passes in a row (``at_most + 1`` when unreachable).
    """
    for n in range(1, at_most + 1):
        if clopper_pearson(n, n, delta)[0] >= rate:
            return n
    return at_most + 1


@dataclass(frozen=True)
class CandidateEvidence:
    """What the trials of one context show."""

    trials: int
    value: float
    """Mean score (v^, Eq. 2)."""
    lower: float
    """Lower end of the value (the value itself in a quiet run)."""
    upper: float
    """Upper end of the value."""
    recovery: Recovery
    """Verifiably recovers (``yes``), verifiably does not (``no``), or ``open``."""
    mixed: bool
    """Its trials disagree."""


@dataclass(frozen=True)
class Selection:
    """Eq. 18-20 under the sequential rule."""

    selected: int
    gains: list[float]
    recovered: list[bool]
    admissible: list[bool]
    undecided: bool
    """Nothing admissible, the full context does not verifiably recover, and a candidate
    that looks better than it, with disagreeing verdicts, neither verifiably recovers nor
    verifiably fails on all the trials the rule could use."""


class SequentialVerifier:
    """The sequential rule (module docstring) over a :class:`CoalitionGame`.

    Stateless: every decision is read from the game's trial scores, so the engine and any
    other caller (the benchmark's baselines) share it by evaluating what :meth:`plan`
    asks for until it asks for nothing.

    Args:
        trials: T, the trials every candidate gets first.
        max_trials: the most trials one context gets.
        success_threshold: the score a trial must reach to pass.
        recovery_rate: the pass rate a candidate must verifiably reach (Eq. 19).
        delta: the level of each one-sided Clopper-Pearson bound.
        exit_rate: the pass rate the full context must verifiably reach for an early exit.
    """

    def __init__(
        self,
        *,
        trials: int,
        max_trials: int,
        success_threshold: float,
        recovery_rate: float,
        delta: float,
        exit_rate: float | None = None,
    ) -> None:
        self.trials = trials
        self.max_trials = max(max_trials, trials)
        self.threshold = success_threshold
        self.rate = recovery_rate
        self.exit_rate = recovery_rate if exit_rate is None else exit_rate
        self.delta = delta
        self.verify_trials = self._unanimous(self.rate)
        """Trials a candidate that passes every one needs before it verifiably recovers."""
        self.exit_trials = self._unanimous(self.exit_rate)
        """Trials the full context must pass, every one, before an early exit."""

    def _unanimous(self, rate: float) -> int:
        needed = trials_to_verify(rate, self.delta, self.max_trials)
        return max(self.trials, min(self.max_trials, needed))

    # ------------------------------------------------------------------ evidence
    @staticmethod
    def noisy(game: CoalitionGame) -> bool:
        """Some context's trials disagree.

        Args:
            game: the coalition table.

        Returns:
            True once any coalition's trials disagree.
        """
        return any(len(set(scores)) > 1 for scores in game.scores.values())

    def evidence(self, game: CoalitionGame, coalition: Coalition, noisy: bool) -> CandidateEvidence:
        """What the trials of ``coalition`` show: value bounds and recovery.

        Args:
            game: the coalition table.
            coalition: the context M minus a candidate.
            noisy: whether any context's trials disagree (values become intervals).

        Returns:
            The candidate's evidence.
        """
        scores = game.scores.get(coalition, ())
        n = len(scores)
        if n == 0:
            return CandidateEvidence(0, 0.0, 0.0, 1.0, "open", False)
        value = sum(scores) / n
        mixed = len(set(scores)) > 1
        lower, upper = clopper_pearson(sum(scores), n, self.delta) if noisy else (value, value)
        return CandidateEvidence(n, value, lower, upper, self._recovery(scores, self.rate), mixed)

    def _recovery(self, scores: Sequence[float], rate: float) -> Recovery:
        n = len(scores)
        passes = sum(1 for s in scores if s >= self.threshold)
        if n >= self.trials and clopper_pearson(passes, n, self.delta)[0] >= rate:
            return "yes"
        horizon = max(n, self.max_trials)
        best = clopper_pearson(passes + horizon - n, horizon, self.delta)[0]
        return "open" if best >= rate and n < self.max_trials else "no"

    def _pass_upper(self, game: CoalitionGame, coalition: Coalition) -> float:
        """Upper bound of a context's pass rate.

        Upper bound of the pass rate: below ``recovery_rate`` the context verifiably
        does not recover.
        """
        scores = game.scores.get(coalition, ())
        passes = sum(1 for s in scores if s >= self.threshold)
        return clopper_pearson(passes, len(scores), self.delta)[1]

    def _next_trials(self, have: int, noisy: bool, unanimous: int | None = None) -> int:
        """The next step of trials: T, the recovery test, then (noisy) ``max_trials``."""
        unanimous = self.verify_trials if unanimous is None else unanimous
        if have < self.trials:
            return self.trials
        if have < unanimous:
            return unanimous
        return self.max_trials if noisy else have

    # ------------------------------------------------------------------ early exit
    def exit_plan(self, game: CoalitionGame) -> list[tuple[Coalition, int]]:
        """Trials the full context still needs before the early-exit decision.

        Trials the full context still needs before the early-exit decision: T first
        (a failing context, what a clearance trigger sends, is settled there), then what a
        unanimous pass needs (behind a deterministic answer cache these are cache hits).

        Args:
            game: the coalition table.

        Returns:
            (M, trials) while the decision is open; empty once it is made.
        """
        full = game.full
        have = game.trials_of(full)
        if have < self.trials:
            return [(full, self.trials)]
        ev = self.evidence(game, full, self.noisy(game))
        if self._recovery(game.scores[full], self.exit_rate) != "open":
            return []
        if not ev.mixed and ev.value < 1.0 - GAIN_TOLERANCE:
            return []  # below the maximum: a candidate could gain, no exit possible
        want = self._next_trials(have, ev.mixed, self.exit_trials)
        return [(full, want)] if want > have else []

    def exits(self, game: CoalitionGame) -> bool:
        """Whether the run may exit early (Eq. 20 would select C_0).

        The full context verifiably recovers (at ``exit_rate``) and no candidate could
        show a gain over it.

        Args:
            game: the coalition table with the exit plan evaluated.

        Returns:
            True when the run exits early.
        """
        noisy = self.noisy(game)
        ev = self.evidence(game, game.full, noisy)
        if self._recovery(game.scores.get(game.full, ()), self.exit_rate) != "yes":
            return False
        if not noisy:
            return ev.value >= 1.0 - GAIN_TOLERANCE
        best_possible = clopper_pearson(self.max_trials, self.max_trials, self.delta)[0]
        return ev.upper >= best_possible

    # ------------------------------------------------------------------ candidates
    def _admissible(self, ev: CandidateEvidence, base: CandidateEvidence) -> bool:
        return ev.recovery == "yes" and ev.lower > base.upper + GAIN_TOLERANCE

    def plan(
        self, game: CoalitionGame, coalitions: Sequence[Coalition]
    ) -> list[tuple[Coalition, int]]:
        """The next batch of trials for the candidates (Eq. 18-19).

        The next batch of (coalition, trials it must reach) for the candidates M minus
        C_j (``coalitions``, C_0 first), or [] once Eq. 20's choice is settled.

        Round by round: the full context gets T trials; a candidate new to the table gets
        the trials a unanimous pass needs, one with fewer than T trials (attribution gave
        it one) gets T; one that may still be admissible gets the next
        step (T, the recovery test, then ``max_trials`` in a noisy run); when a candidate
        has passed every trial so far and another one has too or is new, they may tie,
        so they go straight to ``max_trials``; in a noisy run a candidate that recovers
        without a verified gain takes the full context with it to more trials; finally
        both ends of a remaining tie get ``max_trials``.

        Args:
            game: the coalition table.
            coalitions: M minus C_j for each candidate, M first.

        Returns:
            (coalition, trials) pairs; empty once every verdict is settled.
        """
        noisy = self.noisy(game)
        evidence = [self.evidence(game, c, noisy) for c in coalitions]
        base = evidence[0]
        want: dict[Coalition, int] = {}

        def ask(j: int, trials: int) -> None:
            if trials > evidence[j].trials:
                want[coalitions[j]] = max(want.get(coalitions[j], 0), trials)

        if base.trials < self.trials:
            ask(0, self.trials)
        perfect: list[int] = []
        fresh: list[int] = []
        for j in range(1, len(coalitions)):
            ev = evidence[j]
            if ev.trials == 0:
                fresh.append(j)
                ask(j, self.verify_trials)
                continue
            if ev.trials < self.trials and (ev.mixed or ev.value < self.threshold):
                ask(j, self.trials)  # one failed attribution trial decides nothing
                continue
            if ev.recovery == "no":
                continue
            if base.trials and ev.value <= base.value + GAIN_TOLERANCE:
                continue  # cannot gain on the trials so far
            if self._admissible(ev, base):
                if not ev.mixed and ev.value >= 1.0 - GAIN_TOLERANCE:
                    perfect.append(j)
                continue
            if ev.recovery == "yes" and base.trials < self.max_trials:
                # recovers, but the gain is not verified: the full context needs trials
                ask(0, self._next_trials(base.trials, True))
            if ev.trials >= self.max_trials:
                continue
            if not ev.mixed and ev.value >= 1.0 - GAIN_TOLERANCE:
                perfect.append(j)
            passing = not ev.mixed and ev.value >= self.threshold and ev.trials < self.verify_trials
            ask(j, self.verify_trials if passing else self._next_trials(ev.trials, noisy))
        if perfect and len(perfect) + len(fresh) > 1:
            for j in perfect + fresh:  # they would tie: settle it in this round
                ask(j, self.max_trials)
        if want:
            return list(want.items())
        return self._tie_plan(coalitions, evidence, base)

    def _tie_plan(
        self,
        coalitions: Sequence[Coalition],
        evidence: Sequence[CandidateEvidence],
        base: CandidateEvidence,
    ) -> list[tuple[Coalition, int]]:
        """Trials that settle a tie between the selected and a larger candidate.

        Both ends of a tie between the selected candidate and a larger one that looks
        at least as good get ``max_trials`` trials before the tie is broken by index.
        """
        selected = self._select_index(evidence, base)
        if selected == 0:
            return []
        top = evidence[selected].value
        tied = [
            j
            for j in range(selected + 1, len(coalitions))
            if self._admissible(evidence[j], base) and evidence[j].value >= top - GAIN_TOLERANCE
        ]
        if not tied:
            return []
        return [
            (coalitions[j], self.max_trials)
            for j in (selected, *tied)
            if evidence[j].trials < self.max_trials
        ]

    def _select_index(self, evidence: Sequence[CandidateEvidence], base: CandidateEvidence) -> int:
        """Eq. 20 on evidence: the index selected.

        Eq. 20 on evidence: the smallest admissible index that no admissible candidate is
        verifiably better than (its lower end above this one's upper end). With exact values
        this is min argmax of the value (the paper's choice); under noise a larger clearance
        is chosen over a smaller one only when it verifiably gains more, so a lucky trial
        never buys an extra deletion.
        """
        admissible = [0] + [
            j for j in range(1, len(evidence)) if self._admissible(evidence[j], base)
        ]
        best_lower = max(evidence[j].lower for j in admissible)
        return min(j for j in admissible if evidence[j].upper >= best_lower - GAIN_TOLERANCE)

    def close_plan(
        self, game: CoalitionGame, coalitions: Sequence[Coalition], at_most: int
    ) -> list[tuple[Coalition, int]]:
        """Trials beyond ``max_trials`` for verdicts that are still close (``close_trials``).

        Called once :meth:`plan` asks for nothing; in a noisy run only (quiet verdicts
        agree, nothing is close). Two situations, each settled in rounds of
        ``max_trials // 2`` more trials, up to ``at_most`` per context:

        - **Nothing selected** while the full context does not verifiably recover, and a
          candidate looks better than it and could still verify (its recovery and gain
          are reachable within ``at_most`` trials): the two best-looking such candidates
          and the full context get more trials, instead of abstaining (``undecided``) or
          keeping a context a candidate may verifiably improve.
        - **A candidate selected** while a smaller one it contains (fewer deletions) is not
          admissible yet but could still verify: that one, the selected one and the full
          context get more trials, so a lucky superset does not buy an extra deletion.

        Eq. 18-20 are unchanged (:meth:`select` decides on all the trials); only where
        the trials go changes.

        Args:
            game: the coalition table with :meth:`plan`'s trials evaluated.
            coalitions: M minus C_j for each candidate, M first.
            at_most: the most trials one context gets here (above ``max_trials``).

        Returns:
            (coalition, trials) pairs; empty once no verdict is close.
        """
        if at_most <= self.max_trials or not self.noisy(game):
            return []
        evidence = [self.evidence(game, c, True) for c in coalitions]
        base = evidence[0]
        selected = self._select_index(evidence, base)
        step = max(1, self.max_trials // 2)

        def reachable(j: int) -> bool:
            ev = evidence[j]
            if ev.trials >= at_most or ev.value <= base.value + GAIN_TOLERANCE:
                return False
            if self._admissible(ev, base):
                return False
            if ev.recovery == "yes":
                return True  # recovers; its gain over M is not verified yet
            scores = game.scores.get(coalitions[j], ())
            passes = sum(1 for s in scores if s >= self.threshold)
            best = clopper_pearson(passes + at_most - len(scores), at_most, self.delta)[0]
            return best >= self.rate

        if selected == 0:
            if base.recovery == "yes":
                return []
            close = [j for j in range(1, len(coalitions)) if reachable(j)]
            chosen = sorted(close, key=lambda j: (-evidence[j].value, j))[:2]
        else:
            kept = coalitions[selected]
            smaller = [
                j
                for j in range(1, len(coalitions))
                if coalitions[j] != kept and kept & ~coalitions[j] == 0 and reachable(j)
            ]
            chosen = sorted(smaller, key=lambda j: (-evidence[j].value, j))[:1]
            if chosen:
                chosen.append(selected)
        if not chosen:
            return []
        plan: dict[Coalition, int] = {}
        for j in (0, *chosen):
            have = evidence[j].trials
            if have < at_most:
                plan[coalitions[j]] = min(at_most, max(have, self.max_trials) + step)
        return list(plan.items())

    def select(self, game: CoalitionGame, coalitions: Sequence[Coalition]) -> Selection:
        """Eq. 18-20 on the current trials (call once :meth:`plan` asks for nothing).

        Args:
            game: the coalition table with the plan evaluated.
            coalitions: M minus C_j for each candidate, M first.

        Returns:
            The selection: index, gains, recovered and admissible flags, undecided.
        """
        noisy = self.noisy(game)
        evidence = [self.evidence(game, c, noisy) for c in coalitions]
        base = evidence[0]
        admissible = [True] + [self._admissible(ev, base) for ev in evidence[1:]]
        selected = self._select_index(evidence, base)
        undecided = (
            selected == 0
            and base.recovery != "yes"
            and any(
                ev.value > base.value + GAIN_TOLERANCE
                and (ev.mixed or base.mixed)
                and ev.recovery != "yes"
                and self._pass_upper(game, c) >= self.rate
                for c, ev in zip(coalitions[1:], evidence[1:], strict=True)
            )
        )
        return Selection(
            selected=selected,
            gains=[ev.value - base.value for ev in evidence],
            recovered=[ev.recovery == "yes" for ev in evidence],
            admissible=admissible,
            undecided=undecided,
        )
