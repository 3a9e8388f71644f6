"""Trigger policies: whether a query's retrieved context is cleared at all.

A policy looks at the query and its retrieved context *before any model call* and returns a
:class:`TriggerDecision`. When it declines, the integration returns the inner retriever's
documents unchanged, annotated ``status="skipped"`` with the reason: zero extra model calls.
When it runs, the decision may also ask for early exit (judge the full context first) and
carry a token budget to enforce after clearance (``token_budget``).

Policies compose: ``a | b`` runs when either runs, ``a & b`` when both do. Every policy is
safe to share between concurrent queries (threads and asyncio tasks): state changes happen
under a lock, inside :meth:`Trigger.decide`, which never awaits. Policies that read a
database (feedback, known harm) block briefly; :meth:`Trigger.adecide` runs them in a
worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..core.errors import ConfigurationError, ConfigurationTypeError
from ..core.memory import Memory

__all__ = ["AllOf", "AnyOf", "Trigger", "TriggerContext", "TriggerDecision"]


@dataclass(frozen=True, slots=True)
class TriggerContext:
    """What a policy may look at: the query and its retrieved context, nothing evaluated."""

    query: str
    """The query text (policies never store it)."""
    query_id: str
    """The query's hash (``runtime.hashing.query_hash``), shared with the ledger."""
    memories: tuple[Memory, ...]
    """The retrieved context, in retrieval order."""


@dataclass(frozen=True, slots=True)
class TriggerDecision:
    """Run clearance or not, and why."""

    run: bool
    """Clear this context (False: return it unchanged, ``status="skipped"``)."""
    policy: str
    """The policy that decided (its ``name``)."""
    reason: str
    """Short code: ``always``, ``judge_first``, ``sampled`` / ``not_sampled``, ``periodic``
    / ``periodic_wait``, ``over_token_budget`` / ``under_token_budget``,
    ``negative_feedback`` / ``low_success_rate`` / ``no_negative_feedback``,
    ``known_harm`` / ``no_known_harm``."""
    early_exit: bool | None = None
    """Force the engine's early exit on (True) or off (False); None keeps the config's."""
    max_tokens: int | None = None
    """A token budget to enforce after clearance (``token_budget.fit_to_budget``)."""
    counter: Callable[[str], int] | None = field(default=None, compare=False, repr=False)
    """How the budget's tokens are counted (the ``TokenBudget`` policy's counter)."""
    detail: str = ""
    """Human-readable detail (no query text)."""
    parts: tuple[TriggerDecision, ...] = field(default=())
    """The children's decisions of a composite policy."""

    @property
    def status_reason(self) -> str:
        """The ``status_reason`` of a skipped report: ``trigger:<policy>:<reason>``."""
        return f"trigger:{self.policy}:{self.reason}"


class Trigger:
    """Base of every trigger policy (module docstring)."""

    name: str = "trigger"
    blocking: bool = False
    """True when :meth:`decide` does I/O (then :meth:`adecide` uses a worker thread)."""

    def decide(self, context: TriggerContext) -> TriggerDecision:  # pragma: no cover
        """Decide whether this query's context is cleared.

        Args:
            context: The query: its id, text and retrieved memories.

        Returns:
            The decision: run or skip, the policy and the reason.

        Raises:
            NotImplementedError: A subclass does not implement it.
        """
        raise NotImplementedError

    async def adecide(self, context: TriggerContext) -> TriggerDecision:
        """:meth:`decide` for asyncio callers, off the event loop when it blocks (same args)."""
        if self.blocking:
            return await asyncio.to_thread(self.decide, context)
        return self.decide(context)

    def __or__(self, other: Trigger) -> AnyOf:
        return AnyOf(self, other)

    def __and__(self, other: Trigger) -> AllOf:
        return AllOf(self, other)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _merge_early_exit(decisions: Sequence[TriggerDecision]) -> bool | None:
    """False if any asks for attribution, True if every one asks for early exit, else None."""
    wishes = [d.early_exit for d in decisions]
    if any(w is False for w in wishes):
        return False
    if wishes and all(w is True for w in wishes):
        return True
    return None


def _merge_budget(
    decisions: Sequence[TriggerDecision],
) -> tuple[int | None, Callable[[str], int] | None]:
    """The smallest budget asked for, with its counter."""
    budgets = [d for d in decisions if d.max_tokens is not None]
    if not budgets:
        return None, None
    tightest = min(budgets, key=lambda d: d.max_tokens or 0)
    return tightest.max_tokens, tightest.counter


class _Composite(Trigger):
    def __init__(self, *policies: Trigger) -> None:
        flat: list[Trigger] = []
        for p in policies:
            if not isinstance(p, Trigger):
                raise ConfigurationTypeError(f"expected Trigger policies, got {type(p).__name__}")
            flat.extend(p.policies if type(p) is type(self) else [p])
        if not flat:
            raise ConfigurationError("a composite trigger needs at least one policy")
        self.policies: tuple[Trigger, ...] = tuple(flat)
        self.blocking = any(p.blocking for p in flat)
        joiner = " | " if isinstance(self, AnyOf) else " & "
        self.name = "(" + joiner.join(p.name for p in flat) + ")"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(p) for p in self.policies)})"

    def _combine(self, decisions: list[TriggerDecision], run: bool) -> TriggerDecision:
        # the running children shape the run; without a run every child's reason is kept
        relevant = [d for d in decisions if d.run] if run else decisions
        first = relevant[0]
        budget, counter = _merge_budget(relevant) if run else (None, None)
        return TriggerDecision(
            run=run,
            policy=first.policy if len(relevant) == 1 else self.name,
            reason="+".join(dict.fromkeys(d.reason for d in relevant)),
            early_exit=_merge_early_exit(relevant) if run else None,
            max_tokens=budget,
            counter=counter,
            detail="; ".join(d.detail for d in relevant if d.detail),
            parts=tuple(decisions),
        )


class AnyOf(_Composite):
    """Runs when any policy runs. Every policy is asked (so periodic counters keep count).

    ``a | b`` builds one; nested ``AnyOf`` are flattened.

    Args:
        *policies: The policies, at least one.

    Raises:
        ConfigurationTypeError: A policy is not a :class:`Trigger`.
        ConfigurationError: No policy is given.

    Example:
        >>> from meclear_integrations.triggers import EveryN, Sampling, TriggerContext
        >>> policy = EveryN(4) | Sampling(0.0)
        >>> policy.decide(TriggerContext("?", "q1", ())).run
        True
    """

    def decide(self, context: TriggerContext) -> TriggerDecision:
        """Decide whether this query's context is cleared.

        Args:
            context: The query: its id, text and retrieved memories.

        Returns:
            The decision: run or skip, the policy and the reason.
        """
        decisions = [p.decide(context) for p in self.policies]
        return self._combine(decisions, any(d.run for d in decisions))


class AllOf(_Composite):
    """Runs only when every policy runs. Every policy is asked.

    ``a & b`` builds one; nested ``AllOf`` are flattened.

    Args:
        *policies: The policies, at least one.

    Raises:
        ConfigurationTypeError: A policy is not a :class:`Trigger`.
        ConfigurationError: No policy is given.

    Example:
        >>> from meclear_integrations.triggers import EveryN, Sampling, TriggerContext
        >>> (EveryN(1) & Sampling(0.0)).decide(TriggerContext("?", "q1", ())).run
        False
    """

    def decide(self, context: TriggerContext) -> TriggerDecision:
        """Decide whether this query's context is cleared.

        Args:
            context: The query: its id, text and retrieved memories.

        Returns:
            The decision: run or skip, the policy and the reason.
        """
        decisions = [p.decide(context) for p in self.policies]
        if all(d.run for d in decisions):
            return self._combine(decisions, True)
        declined = self._combine([d for d in decisions if not d.run], False)
        return replace(declined, parts=tuple(decisions))
