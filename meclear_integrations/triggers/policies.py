"""The simple trigger policies: always, judge first, sampling, periodic."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

from ..core.errors import ConfigurationError
from .base import Trigger, TriggerContext, TriggerDecision

__all__ = ["Always", "EveryN", "EverySeconds", "Sampling", "WhenJudgeFails"]


class Always(Trigger):
    """Clear every query.

    Args:
        early_exit: None keeps the engine configuration's; False attributes every context,
            even one that already passes (what "always clear" costs, and evidence for review
            on every query).

    Example:
        >>> from meclear_integrations.triggers import Always, TriggerContext
        >>> Always().decide(TriggerContext("Where is John?", "q1", ())).run
        True
    """

    name = "always"

    def __init__(self, *, early_exit: bool | None = None) -> None:
        self.early_exit = early_exit

    def __repr__(self) -> str:
        return "Always()" if self.early_exit is None else f"Always(early_exit={self.early_exit})"

    def decide(self, context: TriggerContext) -> TriggerDecision:
        """Decide whether this query's context is cleared.

        Args:
            context: The query: its id, text and retrieved memories.

        Returns:
            The decision: run or skip, the policy and the reason.
        """
        return TriggerDecision(
            run=True, policy=self.name, reason="always", early_exit=self.early_exit
        )


class WhenJudgeFails(Trigger):
    """Judge the full context first (T calls) and attribute only when it fails.

    The engine's early exit, as an explicit policy. A context that passes costs T calls, no more.

    Example:
        >>> from meclear_integrations.triggers import TriggerContext, WhenJudgeFails
        >>> WhenJudgeFails().decide(TriggerContext("?", "q1", ())).early_exit
        True
    """

    name = "when_judge_fails"

    def decide(self, context: TriggerContext) -> TriggerDecision:
        """Decide whether this query's context is cleared.

        Args:
            context: The query: its id, text and retrieved memories.

        Returns:
            The decision: run or skip, the policy and the reason.
        """
        return TriggerDecision(run=True, policy=self.name, reason="judge_first", early_exit=True)


class Sampling(Trigger):
    """Clear a random share ``rate`` of the queries (seeded; draws are serialized).

    Args:
        rate: The share of queries cleared, in [0, 1].
        seed: The seed of the draws (None: unseeded).

    Raises:
        ConfigurationError: ``rate`` is outside [0, 1].

    Example:
        >>> from meclear_integrations.triggers import Sampling, TriggerContext
        >>> Sampling(1.0, seed=0).decide(TriggerContext("?", "q1", ())).reason
        'sampled'
    """

    def __init__(self, rate: float, *, seed: int | None = None) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ConfigurationError("rate must be in [0, 1]")
        self.rate = rate
        self.name = f"sampling({rate:g})"
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Sampling({self.rate!r})"

    def decide(self, context: TriggerContext) -> TriggerDecision:
        """Decide whether this query's context is cleared.

        Args:
            context: The query: its id, text and retrieved memories.

        Returns:
            The decision: run or skip, the policy and the reason.
        """
        with self._lock:
            draw = self._rng.random()
        run = draw < self.rate
        return TriggerDecision(
            run=run, policy=self.name, reason="sampled" if run else "not_sampled"
        )


class EveryN(Trigger):
    """Clear the first query and then every ``n``-th one.

    The counter is shared by all callers of this policy object (per process).

    Args:
        n: The period, at least 1.

    Raises:
        ConfigurationError: ``n`` is less than 1.

    Example:
        >>> from meclear_integrations.triggers import EveryN, TriggerContext
        >>> policy, ctx = EveryN(2), TriggerContext("?", "q1", ())
        >>> [policy.decide(ctx).run for _ in range(3)]
        [True, False, True]
    """

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ConfigurationError("n must be at least 1")
        self.n = n
        self.name = f"every_n({n})"
        self._count = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"EveryN({self.n})"

    def decide(self, context: TriggerContext) -> TriggerDecision:
        """Decide whether this query's context is cleared.

        Args:
            context: The query: its id, text and retrieved memories.

        Returns:
            The decision: run or skip, the policy and the reason.
        """
        with self._lock:
            position = self._count
            self._count += 1
        run = position % self.n == 0
        return TriggerDecision(
            run=run,
            policy=self.name,
            reason="periodic" if run else "periodic_wait",
            detail=f"query {position % self.n + 1} of every {self.n}",
        )


class EverySeconds(Trigger):
    """Clear the first query and then the first one ``seconds`` after the last one let through.

    Args:
        seconds: The minimum time between two cleared queries (per process), positive.
        clock: Monotonic seconds (injected by tests).

    Raises:
        ConfigurationError: ``seconds`` is not positive.

    Example:
        >>> from meclear_integrations.triggers import EverySeconds, TriggerContext
        >>> now = [0.0]
        >>> policy = EverySeconds(10, clock=lambda: now[0])
        >>> ctx = TriggerContext("?", "q1", ())
        >>> runs = [policy.decide(ctx).run]
        >>> now[0] = 5.0
        >>> runs.append(policy.decide(ctx).run)
        >>> now[0] = 12.0
        >>> runs + [policy.decide(ctx).run]
        [True, False, True]
    """

    def __init__(self, seconds: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        if seconds <= 0:
            raise ConfigurationError("seconds must be positive")
        self.seconds = seconds
        self.name = f"every_seconds({seconds:g})"
        self._clock = clock
        self._last: float | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"EverySeconds({self.seconds!r})"

    def decide(self, context: TriggerContext) -> TriggerDecision:
        """Decide whether this query's context is cleared.

        Args:
            context: The query: its id, text and retrieved memories.

        Returns:
            The decision: run or skip, the policy and the reason.
        """
        with self._lock:
            now = self._clock()
            run = self._last is None or now - self._last >= self.seconds
            if run:
                self._last = now
            waited = 0.0 if self._last is None else now - self._last
        return TriggerDecision(
            run=run,
            policy=self.name,
            reason="periodic" if run else "periodic_wait",
            detail="" if run else f"{waited:.1f}s of {self.seconds:g}s elapsed",
        )
