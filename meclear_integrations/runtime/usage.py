"""Model calls and tokens of one query, agent and judge apart, and what it cost (framework-free).

The task evaluator knows which role a model call plays: it sets :func:`model_role` around
the agent's and the judge's calls. The integrations open a :class:`UsageMeter` for a
query (:func:`metering`) and feed it from their frameworks' hooks (a LangChain callback
handler's ``on_llm_end``, LlamaIndex's LLM end events): :func:`record_usage` adds the
tokens a provider reported to the meter of the current context, under the current role.
Both are context variables, so they follow the call into worker threads and tasks, and
concurrent queries never mix.

What a query cost in model calls, agent and judge apart (what a user pays): the engine
counts evaluator calls; one evaluator call is an agent call plus a judge call, minus what
the task evaluator's per-query caches saved (``judges.task``). The integrations put the
model calls and, when the provider reported usage, the tokens into the report's ``cost``
(:func:`with_model_calls`), into the ``cost`` of the clearance end event
(:func:`with_event_cost`), and from there into the document metadata and trace outputs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..core.report import TokenUsage

if TYPE_CHECKING:
    from ..core.events import StageEvent
    from ..core.report import ClearanceReport

__all__ = [
    "UsageMeter",
    "cost_fields",
    "cost_source",
    "metering",
    "model_role",
    "record_usage",
    "usage_from_mapping",
    "with_event_cost",
    "with_model_calls",
]

UsageRole = Literal["agent", "judge"]

_METER: ContextVar[UsageMeter | None] = ContextVar("meclear_usage_meter", default=None)
_ROLE: ContextVar[UsageRole | None] = ContextVar("meclear_usage_role", default=None)


class UsageMeter:
    """Token usage of one query per role (thread-safe)."""

    def __init__(self) -> None:
        self._tokens: dict[str, list[int]] = {}
        self._seen: dict[int, object] = {}
        self._lock = threading.Lock()

    def add(
        self, role: str, input_tokens: int, output_tokens: int, *, source: object = None
    ) -> None:
        """Book one call's tokens.

        A ``source`` already booked (the same provider response object reported by nested
        wrappers) is ignored. The meter keeps a reference to each source for its lifetime,
        so a new response never reuses a booked one's identity.

        Args:
            role: ``agent`` or ``judge``.
            input_tokens: The prompt tokens.
            output_tokens: The completion tokens.
            source: The provider's response object.
        """
        with self._lock:
            if source is not None:
                if id(source) in self._seen:
                    return
                self._seen[id(source)] = source
            entry = self._tokens.setdefault(role, [0, 0, 0])
            entry[0] += input_tokens
            entry[1] += output_tokens
            entry[2] += 1

    def tokens(self, role: str) -> TokenUsage | None:
        """The role's token usage, or None when no call of it reported usage.

        Args:
            role: ``agent`` or ``judge``.

        Returns:
            The input, output and reporting calls.
        """
        with self._lock:
            entry = self._tokens.get(role)
        if entry is None:
            return None
        return TokenUsage(input_tokens=entry[0], output_tokens=entry[1], calls_reported=entry[2])


@contextmanager
def metering(meter: UsageMeter) -> Iterator[UsageMeter]:
    """Within the block, reported usage goes to ``meter``.

    Args:
        meter: The query's meter.

    Yields:
        The meter.
    """
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


@contextmanager
def model_role(role: UsageRole) -> Iterator[None]:
    """Within the block, model calls are the ``role``'s.

    Args:
        role: ``agent`` or ``judge``.

    Yields:
        Nothing; the role is set for the block.
    """
    token = _ROLE.set(role)
    try:
        yield
    finally:
        _ROLE.reset(token)


def record_usage(input_tokens: int, output_tokens: int, *, source: object = None) -> None:
    """Add a model call's reported tokens to the current meter under the current role.

    Nothing happens outside a metered query or outside an agent / judge call.

    Args:
        input_tokens: The prompt tokens.
        output_tokens: The completion tokens.
        source: The provider's response object (a response reported twice is booked once).
    """
    meter, role = _METER.get(), _ROLE.get()
    if meter is not None and role is not None:
        meter.add(role, max(0, int(input_tokens)), max(0, int(output_tokens)), source=source)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage_from_mapping(usage: Mapping[str, Any] | None) -> tuple[int, int] | None:
    """(input, output) tokens from a usage mapping in the common spellings.

    The spellings are ``input_tokens`` / ``output_tokens`` and ``prompt_tokens`` /
    ``completion_tokens``.

    Args:
        usage: The provider's usage mapping.

    Returns:
        The tokens, or None when the mapping has none.
    """
    if not isinstance(usage, Mapping):
        return None
    tokens_in = _int(usage.get("input_tokens", usage.get("prompt_tokens")))
    tokens_out = _int(usage.get("output_tokens", usage.get("completion_tokens")))
    if tokens_in is None and tokens_out is None:
        return None
    return tokens_in or 0, tokens_out or 0


class QueryCalls(Protocol):
    """The agent and judge calls of one query, as the task evaluator counts them.

    :class:`meclear_integrations.judges.task.TaskCalls` is one; a protocol here, since the
    task evaluator imports this module.
    """

    @property
    def agent_calls(self) -> int:
        """Agent invocations made."""
        ...

    @property
    def judge_calls(self) -> int:
        """Judge invocations made."""
        ...

    @property
    def limiter(self) -> dict[str, Any] | None:
        """The limiter's bound, peak and this query's waits (None: no limiter)."""
        ...


def cost_fields(calls: QueryCalls, meter: UsageMeter | None) -> dict[str, Any]:
    """The model-call fields of ``ClearanceCost`` for one query.

    Args:
        calls: The query's agent and judge calls.
        meter: The query's token meter, if any.

    Returns:
        ``agent_calls``, ``judge_calls``, ``agent_tokens`` and ``judge_tokens``.
    """
    return {
        "agent_calls": calls.agent_calls,
        "judge_calls": calls.judge_calls,
        "agent_tokens": meter.tokens("agent") if meter is not None else None,
        "judge_tokens": meter.tokens("judge") if meter is not None else None,
    }


def cost_source(task: Any, meter: UsageMeter | None) -> Callable[[], dict[str, Any]]:
    """What the clearance span reads when the run ends (``clearance_scope(cost=...)``).

    Args:
        task: The query's task evaluator (its ``calls`` are read at call time).
        meter: The query's token meter, if any.

    Returns:
        A function giving :func:`cost_fields` at the time it is called.
    """
    return lambda: cost_fields(task.calls, meter)


def with_model_calls(
    report: ClearanceReport, calls: QueryCalls, meter: UsageMeter | None
) -> ClearanceReport:
    """``report`` with its cost's model calls (and tokens) filled in.

    Args:
        report: The engine's report.
        calls: The query's agent and judge calls.
        meter: The query's token meter, if any.

    Returns:
        A new report.
    """
    cost = report.cost.model_copy(update=cost_fields(calls, meter))
    return report.model_copy(update={"cost": cost})


def with_event_cost(event: StageEvent, calls: QueryCalls, meter: UsageMeter | None) -> StageEvent:
    """A clearance end event whose ``cost`` also holds the model calls so far.

    With a limiter, the event also gets ``limiter``: its bound (``max_in_flight``), its
    ``peak_in_flight`` so far, and this query's ``acquisitions``, ``waited`` and
    ``wait_seconds`` (``meclear_integrations.runtime.limiter``).

    A ``progress`` event gets ``model_calls_done``: the agent and judge calls so far.

    Args:
        event: An engine stage event (only clearance end and progress events change).
        calls: The query's agent and judge calls so far.
        meter: The query's token meter, if any.

    Returns:
        The event, or a copy with the model calls added to its cost.
    """
    if event.phase == "progress":
        done = calls.agent_calls + calls.judge_calls
        return event.model_copy(update={"payload": {**event.payload, "model_calls_done": done}})
    cost = event.payload.get("cost")
    if event.stage != "clearance" or event.phase != "end" or not isinstance(cost, dict):
        return event
    fields = cost_fields(calls, meter)
    extra = {k: v.model_dump() if hasattr(v, "model_dump") else v for k, v in fields.items()}
    extra["model_calls"] = calls.agent_calls + calls.judge_calls
    payload = {**event.payload, "cost": {**cost, **extra}}
    if calls.limiter is not None:
        payload["limiter"] = calls.limiter
    return event.model_copy(update={"payload": payload})
