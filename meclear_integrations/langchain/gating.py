"""Triggers and the harm ledger on the LangChain integration (glue around ``ClearanceGate``).

``ClearingRetriever(..., trigger=..., ledger=...)`` (and the compressor) plan every query
with :class:`~meclear_integrations.gate.ClearanceGate` before any model call: a declined
query returns its documents unchanged, ``status: "skipped"`` with the reason under the
metadata key, one ``meclear.clearance`` event with ``skipped: "trigger"`` and no model call;
a query that runs offers the ledger's verified harm to the engine as its prior candidate,
and its decision is recorded (success signal ``reference`` when the query has one, else
``judge``; model names; the LangSmith trace id when tracing, else the clearance run's id).
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

from ..core.prior import PriorCandidate
from ..core.report import ClearanceReport
from ..gate import ClearanceGate, GateOutcome, GatePlan
from ..gating import model_name, skipped_metadata, with_outcome
from ..payloads import event_name

__all__ = ["GatedClearance", "prior_of", "trace_id"]

AnyRun = CallbackManagerForChainRun | AsyncCallbackManagerForChainRun


def trace_id(run: AnyRun) -> str:
    """The LangSmith trace (root run) id when a tracer follows ``run``, else its own id.

    Args:
        run: The clearance run's manager.

    Returns:
        The trace id.
    """
    for handler in getattr(run, "handlers", []):
        tracked = getattr(handler, "run_map", {}).get(str(run.run_id))
        root = getattr(tracked, "trace_id", None)
        if root is not None:
            return str(root)
    return str(run.run_id)


def _copy(document: Document, key: str, value: dict[str, Any]) -> Document:
    return Document(
        page_content=document.page_content,
        metadata={**document.metadata, key: value},
        id=document.id,
    )


class GatedClearance:
    """Methods the clearance step uses when ``trigger`` or ``ledger`` is set."""

    trigger: Any
    ledger: Any
    metadata_key: str
    llm: Any
    agent: Any
    judge: Any

    def _gate(self) -> ClearanceGate | None:
        if self.trigger is None and self.ledger is None:
            return None
        return ClearanceGate(trigger=self.trigger, ledger=self.ledger)

    def _record_fields(self, reference: str | None, run: AnyRun) -> dict[str, Any]:
        judge = self.judge if self.judge is not None else self.llm
        return {
            "success_signal": "reference" if reference is not None else "judge",
            "agent_model": model_name(self.agent if self.agent is not None else self.llm),
            "judge_model": model_name(judge),
            "trace_run_id": trace_id(run),
            "trace_system": "langchain",
        }

    def _declined(
        self, plan: GatePlan, documents: Sequence[Document], ids: Sequence[str], outcome: Any
    ) -> list[Document]:
        return [
            _copy(d, self.metadata_key, skipped_metadata(mid, outcome))
            for d, mid in zip(documents, ids, strict=True)
        ]

    @staticmethod
    def _skip_payload(plan: GatePlan) -> dict[str, Any]:
        return {
            "stage": "clearance",
            "phase": "end",
            "skipped": "trigger",
            "status_reason": plan.decision.status_reason,
            "trigger": plan.decision.policy,
            "cleared_ids": [],
        }

    def _decline_sync(
        self,
        run: CallbackManagerForChainRun,
        gate: ClearanceGate,
        plan: GatePlan,
        documents: Sequence[Document],
        ids: Sequence[str],
        reference: str | None,
    ) -> list[Document]:
        outcome = gate.finish(plan, gate.skipped(plan), **self._record_fields(reference, run))
        dispatch_custom_event(
            event_name("clearance"), self._skip_payload(plan), config={"callbacks": run.get_child()}
        )
        run.on_chain_end({"skipped": plan.decision.status_reason})
        return self._declined(plan, documents, ids, outcome)

    async def _adecline(
        self,
        run: AsyncCallbackManagerForChainRun,
        gate: ClearanceGate,
        plan: GatePlan,
        documents: Sequence[Document],
        ids: Sequence[str],
        reference: str | None,
    ) -> list[Document]:
        report = gate.skipped(plan)
        outcome = await gate.afinish(plan, report, **self._record_fields(reference, run))
        await adispatch_custom_event(
            event_name("clearance"), self._skip_payload(plan), config={"callbacks": run.get_child()}
        )
        await run.on_chain_end({"skipped": plan.decision.status_reason})
        return self._declined(plan, documents, ids, outcome)

    def _with_outcome(self, kept: list[Document], outcome: GateOutcome) -> list[Document]:
        returned = set(outcome.returned_ids)
        key = self.metadata_key
        return [
            _copy(d, key, with_outcome(d.metadata[key], outcome))
            for d in kept
            if d.metadata[key]["memory_id"] in returned
        ]

    def _finish_sync(
        self,
        gate: ClearanceGate | None,
        plan: GatePlan | None,
        report: ClearanceReport,
        kept: list[Document],
        reference: str | None,
        run: CallbackManagerForChainRun,
    ) -> list[Document]:
        if gate is None or plan is None:
            return kept
        outcome = gate.finish(plan, report, **self._record_fields(reference, run))
        return self._with_outcome(kept, outcome)

    async def _afinish(
        self,
        gate: ClearanceGate | None,
        plan: GatePlan | None,
        report: ClearanceReport,
        kept: list[Document],
        reference: str | None,
        run: AsyncCallbackManagerForChainRun,
    ) -> list[Document]:
        if gate is None or plan is None:
            return kept
        outcome = await gate.afinish(plan, report, **self._record_fields(reference, run))
        return self._with_outcome(kept, outcome)


def prior_of(plan: GatePlan | None) -> PriorCandidate:
    """The ledger's prior candidate of a gated query (none without a gate).

    Args:
        plan: The gate's plan, or None.

    Returns:
        The prior candidate to pass to the engine.
    """
    return plan.prior if plan is not None else PriorCandidate()
