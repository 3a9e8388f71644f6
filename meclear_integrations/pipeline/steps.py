"""The steps the query flow yields to its driver, and what the flow returns.

The flow (:mod:`.flow`) is a generator: it never does I/O itself. It yields

- :class:`Call`: blocking work off the model path (the trigger, the ledger lookup, the
  ledger write, an enqueue). The sync driver calls ``sync()``; the async driver awaits
  ``asynchronous()`` (default: ``sync`` in a worker thread, so the event loop never waits
  on a database).
- :class:`Notify`: a clearance event that has no engine stage behind it (an empty
  context, a declined query, a background decision). Each integration reports it its own
  way (a LangChain custom event and the run's end; a LlamaIndex start/end event pair).
- :class:`Clear`: run the engine on the context (the integration's agent and judge).

and returns a :class:`FlowResult`, which the integration turns into documents or nodes.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from ..core.concurrency.step_driver import Call
from ..core.config import ClearanceConfig
from ..core.memory import Memory
from ..core.prior import PriorCandidate
from ..core.report import ClearanceReport
from ..guard.gate import GateOutcome

__all__ = ["Call", "Clear", "Flow", "FlowEvent", "FlowResult", "Notify", "Step", "Steps"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class FlowEvent:
    """A clearance event with no engine stage behind it.

    Args:
        payload: The clearance ``end`` payload (``stage``, ``phase``, ``skipped``...).
        ended: What the integration's clearance run ends with (``{"skipped": ended}``).
    """

    payload: dict[str, Any]
    ended: str


@dataclass(frozen=True, slots=True)
class Notify:
    """Report a clearance event (see :class:`FlowEvent`)."""

    event: FlowEvent


@dataclass(frozen=True, slots=True)
class Clear:
    """Run the engine on ``memories`` (the integration's agent, judge and listener).

    Args:
        memories: The frozen context.
        config: The engine configuration of this run.
        prior: The ledger's prior candidate.
    """

    memories: tuple[Memory, ...]
    config: ClearanceConfig
    prior: PriorCandidate = field(default_factory=PriorCandidate)


Step = Call | Notify | Clear
"""One request of the flow to its driver."""

ResultKind = Literal["empty", "guarded", "declined", "cleared", "failed", "background"]


@dataclass(frozen=True, slots=True)
class FlowResult:
    """What the flow decided for one query.

    ``kind``:

    - ``empty``: no items; nothing ran.
    - ``guarded``: the live guard declined (circuit open, budget); ``report`` is skipped.
    - ``declined``: the trigger declined; ``outcome`` holds the recorded skip.
    - ``cleared``: the engine ran; ``report`` and, with a gate, ``outcome``.
    - ``failed``: ``error`` stopped the query before a report (fail-open or raise).
    - ``background``: no engine on the request path; ``background`` says what was withheld
      and which audit was queued.
    """

    kind: ResultKind
    report: ClearanceReport | None = None
    outcome: GateOutcome | None = None
    error: BaseException | None = None
    reason: str | None = None
    """Why the guard declined (``circuit_open``, ``budget``), for the warning."""
    detail: str | None = None
    """The guard's one-line explanation, for the warning."""
    background: Any = None
    """The :class:`~.background.BackgroundDecision` of a background query."""


Steps = Generator[Step, Any, T]
"""A part of the flow: yields steps, returns its value."""

Flow = Generator[Step, Any, FlowResult]
"""The query flow: yields steps, returns the result."""
