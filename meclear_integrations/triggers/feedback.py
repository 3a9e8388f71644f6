"""Triggers driven by what the ledger learned: negative feedback and known harm.

Both read a harm ledger (``meclear_integrations.ledger.HarmLedger``, or anything with the
same methods), so every application replica sharing one PostgreSQL ledger sees the same
feedback and the same verified harm. :class:`OnNegativeFeedback` also works without a
ledger: call :meth:`OnNegativeFeedback.record` with each verdict.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol

from ..core.errors import ConfigurationError
from ..core.memory import Memory
from .base import Trigger, TriggerContext, TriggerDecision

__all__ = ["OnKnownHarm", "OnNegativeFeedback"]


class _Verdict(Protocol):
    correct: bool


class FeedbackSource(Protocol):
    """Where :class:`OnNegativeFeedback` reads verdicts (``HarmLedger`` has these methods)."""

    def latest_feedback(self, query_id: str) -> _Verdict | None:
        """The most recent verdict on ``query_id``.

        Args:
            query_id: The query's id.

        Returns:
            The verdict, or None.
        """
        ...

    def recent_feedback(self, limit: int = 50) -> Sequence[_Verdict]:
        """The latest verdicts, newest first.

        Args:
            limit: The most verdicts returned.

        Returns:
            The verdicts.
        """
        ...


class HarmSource(Protocol):
    """Where :class:`OnKnownHarm` reads known harm (``HarmLedger`` has this method)."""

    def prior_harmful(self, context: Sequence[Memory]) -> list[str]:
        """Ids of the context's memories verified harmful before (and not restored since).

        Args:
            context: The retrieved memories.

        Returns:
            The ids, in retrieval order.
        """
        ...


class OnNegativeFeedback(Trigger):
    """Clear a query whose latest feedback said its answer was wrong.

    With ``window``, also clear every query while fewer than ``min_success_rate`` of the last
    ``window`` verdicts were correct (task performance dropping below a threshold over the last N
    inferences).

    Args:
        ledger: Where feedback is read (a ``HarmLedger`` or anything with
            ``latest_feedback`` / ``recent_feedback``); None keeps the verdicts given to
            :meth:`record` in memory.
        window: The number of latest verdicts whose success rate is watched (None: off).
        min_success_rate: The success rate below which every query is cleared, in [0, 1].

    Raises:
        ConfigurationError: ``window`` is less than 1 or ``min_success_rate`` is outside
            [0, 1].

    Example:
        >>> from meclear_integrations.triggers import OnNegativeFeedback, TriggerContext
        >>> policy = OnNegativeFeedback()
        >>> policy.record("q1", correct=False)
        >>> policy.decide(TriggerContext("Where is John?", "q1", ())).reason
        'negative_feedback'
    """

    def __init__(
        self,
        ledger: FeedbackSource | None = None,
        *,
        window: int | None = None,
        min_success_rate: float = 0.8,
    ) -> None:
        if window is not None and window < 1:
            raise ConfigurationError("window must be at least 1")
        if not 0.0 <= min_success_rate <= 1.0:
            raise ConfigurationError("min_success_rate must be in [0, 1]")
        self.ledger = ledger
        self.window = window
        self.min_success_rate = min_success_rate
        self.blocking = ledger is not None
        self.name = "on_negative_feedback" + (f"(window={window})" if window else "")
        self._latest: dict[str, bool] = {}
        self._recent: deque[bool] = deque(maxlen=window or 1)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OnNegativeFeedback(window={self.window!r})"

    def record(self, query_id: str, correct: bool) -> None:
        """Record a verdict on the answer to ``query_id`` (the in-memory state, without a ledger).

        Args:
            query_id: The query's id.
            correct: Whether the answer was right.
        """
        with self._lock:
            self._latest[query_id] = bool(correct)
            self._recent.append(bool(correct))

    def _state(self, query_id: str) -> tuple[bool | None, list[bool]]:
        if self.ledger is not None:
            latest = self.ledger.latest_feedback(query_id)
            recent = self.ledger.recent_feedback(self.window) if self.window else []
            return (None if latest is None else latest.correct), [f.correct for f in recent]
        with self._lock:
            return self._latest.get(query_id), list(self._recent) if self.window else []

    def decide(self, context: TriggerContext) -> TriggerDecision:
        """Decide whether this query's context is cleared.

        Args:
            context: The query: its id, text and retrieved memories.

        Returns:
            The decision: run or skip, the policy and the reason.
        """
        latest, recent = self._state(context.query_id)
        if latest is False:
            return TriggerDecision(run=True, policy=self.name, reason="negative_feedback")
        if self.window and len(recent) >= self.window:
            rate = sum(recent) / len(recent)
            if rate < self.min_success_rate:
                return TriggerDecision(
                    run=True,
                    policy=self.name,
                    reason="low_success_rate",
                    detail=f"{rate:.0%} correct over the last {len(recent)} verdicts",
                )
        return TriggerDecision(run=False, policy=self.name, reason="no_negative_feedback")


class OnKnownHarm(Trigger):
    """Clear when the context holds a memory the ledger verified harmful for this question.

    With a ``HarmLedger`` the harm is scoped (``HarmLedger.scoped_harm``): verified for the
    same question or one like it; an unrelated question that retrieves the memory is not
    cleared for it. A memory restored since does not count. The cheap ledger-guided
    clearance then usually settles it in a few calls (the baseline and one candidate's
    verification), while contexts without known harm cost nothing.

    Args:
        ledger: A ``HarmLedger`` (scoped), or anything with ``prior_harmful(memories)``
            (unscoped).
    """

    def __init__(self, ledger: HarmSource) -> None:
        self.ledger = ledger
        self.name = "on_known_harm"
        self.blocking = True

    def __repr__(self) -> str:
        return "OnKnownHarm(ledger)"

    def decide(self, context: TriggerContext) -> TriggerDecision:
        """Decide whether this query's context is cleared.

        Args:
            context: The query: its id, text and retrieved memories.

        Returns:
            The decision: run or skip, the policy and the reason.
        """
        scoped = getattr(self.ledger, "scoped_harm", None)
        known: list[Any] = (
            scoped(context.query, context.memories)
            if scoped is not None
            else self.ledger.prior_harmful(context.memories)
        )
        return TriggerDecision(
            run=bool(known),
            policy=self.name,
            reason="known_harm" if known else "no_known_harm",
            detail=f"{len(known)} memories verified harmful before" if known else "",
        )
