"""The live guard on the LlamaIndex postprocessor (glue around ``live_guard.LiveGuard``).

A query the circuit breaker declines returns its nodes unchanged in content, each with
``status: "skipped"`` and ``status_reason: "circuit_open"`` under the metadata key, one
clearance start/end event pair with ``skipped: "circuit_open"`` (and the breaker's state
under ``circuit``), a ``FailOpenWarning`` (once per instance; logged every time) and no
model call; a query whose ``max_evaluator_calls`` cannot pay for clearance is declined
the same way with reason ``budget`` (``live_guard``). Under ``on_failure="closed"`` both
raise instead (``CircuitOpenError``, ``BudgetExceededError``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import NodeWithScore

from ..live_guard import GuardTicket
from ..live_policy import failure_mode
from .events import MeClearStageEvent, StageTracker
from .nodes import annotate

__all__ = ["GuardedPostprocessing"]


class GuardedPostprocessing:
    """Methods the postprocessor uses when the live guard declines a query."""

    metadata_key: str
    edge_cases: Any
    clearance: Any
    on_failure: Any
    _policy: Any

    def _guard_events(self, ticket: GuardTicket, query_id: str) -> list[MeClearStageEvent]:
        """The start/end pair of a declined query.

        Raises:
            Exception: ``ticket.error()`` instead, when failing closed.
        """
        if failure_mode(self.clearance, self.on_failure) == "closed":
            raise ticket.error()
        end = {**ticket.event_payload(), "query_id": query_id}
        return [
            StageTracker.start("clearance", query_id, {**end, "phase": "start"}),
            StageTracker.end("clearance", query_id, end),
        ]

    def _guard_nodes(
        self, ticket: GuardTicket, nodes: Sequence[NodeWithScore], ids: Sequence[str]
    ) -> list[NodeWithScore]:
        """The declined query's nodes, after the warning."""
        self._policy.fail_open_warning(str(ticket.reason), ticket.detail())
        assert ticket.report is not None
        return annotate(nodes, ids, ticket.report, key=self.metadata_key, policy=self.edge_cases)
