"""The live guard on the LangChain components (glue around ``live_guard.LiveGuard``).

A query the circuit breaker declines returns its documents unchanged in content, each
with ``status: "skipped"`` and ``status_reason: "circuit_open"`` under the metadata key,
one ``meclear.clearance`` event with ``skipped: "circuit_open"`` (and the breaker's state
under ``circuit``), a ``FailOpenWarning`` (once per instance; logged every time) and no
model call; a query whose ``max_evaluator_calls`` cannot pay for clearance is declined
the same way with reason ``budget`` (``live_guard``). Under ``on_failure="closed"`` both
raise instead (``CircuitOpenError``, ``BudgetExceededError``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForChainRun,
    CallbackManagerForChainRun,
)
from langchain_core.callbacks.manager import adispatch_custom_event, dispatch_custom_event
from langchain_core.documents import Document

from ..live_guard import GuardTicket
from ..live_policy import failure_mode
from ..payloads import event_name
from .documents import annotate

__all__ = ["GuardedClearance"]


class GuardedClearance:
    """Methods the clearance step uses when the live guard declines a query."""

    metadata_key: str
    edge_cases: Any
    clearance: Any
    on_failure: Any
    _policy: Any

    def _raise_if_closed(self, ticket: GuardTicket) -> None:
        if failure_mode(self.clearance, self.on_failure) == "closed":
            raise ticket.error()

    def _declined_by_guard(
        self, ticket: GuardTicket, documents: Sequence[Document], ids: Sequence[str]
    ) -> list[Document]:
        self._policy.fail_open_warning(str(ticket.reason), ticket.detail())
        assert ticket.report is not None
        return annotate(
            documents, ids, ticket.report, key=self.metadata_key, policy=self.edge_cases
        )

    def _guard_skip_sync(
        self,
        run: CallbackManagerForChainRun,
        ticket: GuardTicket,
        documents: Sequence[Document],
        ids: Sequence[str],
    ) -> list[Document]:
        self._raise_if_closed(ticket)
        dispatch_custom_event(
            event_name("clearance"), ticket.event_payload(), config={"callbacks": run.get_child()}
        )
        run.on_chain_end({"skipped": ticket.reason})
        return self._declined_by_guard(ticket, documents, ids)

    async def _aguard_skip(
        self,
        run: AsyncCallbackManagerForChainRun,
        ticket: GuardTicket,
        documents: Sequence[Document],
        ids: Sequence[str],
    ) -> list[Document]:
        self._raise_if_closed(ticket)
        await adispatch_custom_event(
            event_name("clearance"), ticket.event_payload(), config={"callbacks": run.get_child()}
        )
        await run.on_chain_end({"skipped": ticket.reason})
        return self._declined_by_guard(ticket, documents, ids)
