"""Triggers and the harm ledger on the LlamaIndex postprocessor (glue around the gate).

``MeClearPostprocessor(..., trigger=..., ledger=...)`` plans every query with
:class:`~meclear_integrations.gate.ClearanceGate` before any model call: a declined query
returns its nodes unchanged in content, ``status: "skipped"`` with the reason under the
metadata key, one clearance start/end event pair with ``skipped: "trigger"``, no model call;
a query that runs offers the ledger's verified harm to the engine as its prior candidate and
its decision is recorded (trace id: the postprocessor's span id).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import NodeWithScore

from ..core.prior import PriorCandidate
from ..gate import ClearanceGate, GateOutcome, GatePlan
from ..gating import model_name, skipped_metadata, with_outcome
from .events import MeClearStageEvent, StageTracker
from .nodes import _copy as copy_node

__all__ = ["GatedPostprocessing", "prior_of"]


def prior_of(plan: GatePlan | None) -> PriorCandidate:
    """The ledger's prior candidate of a gated query (none without a gate).

    Args:
        plan: The gate's plan, or None.

    Returns:
        The prior candidate to pass to the engine.
    """
    return plan.prior if plan is not None else PriorCandidate()


class GatedPostprocessing:
    """Methods the postprocessor uses when ``trigger`` or ``ledger`` is set."""

    trigger: Any
    ledger: Any
    metadata_key: str
    judge: Any

    def _gate(self) -> ClearanceGate | None:
        if self.trigger is None and self.ledger is None:
            return None
        return ClearanceGate(trigger=self.trigger, ledger=self.ledger)

    def _record_fields(self, llm: Any, reference: str | None, query_id: str) -> dict[str, Any]:
        return {
            "success_signal": "reference" if reference is not None else "judge",
            "agent_model": model_name(llm),
            "judge_model": model_name(self.judge if self.judge is not None else llm),
            "trace_run_id": query_id,
            "trace_system": "llama_index",
        }

    @staticmethod
    def _decline_events(plan: GatePlan, query_id: str) -> list[MeClearStageEvent]:
        base = {
            "stage": "clearance",
            "query_id": query_id,
            "skipped": "trigger",
            "status_reason": plan.decision.status_reason,
            "trigger": plan.decision.policy,
            "cleared_ids": [],
        }
        return [
            StageTracker.start("clearance", query_id, {**base, "phase": "start"}),
            StageTracker.end("clearance", query_id, {**base, "phase": "end"}),
        ]

    def _declined_nodes(
        self, nodes: Sequence[NodeWithScore], ids: Sequence[str], outcome: GateOutcome
    ) -> list[NodeWithScore]:
        key = self.metadata_key
        return [
            copy_node(n, key, skipped_metadata(mid, outcome))
            for n, mid in zip(nodes, ids, strict=True)
        ]

    def _with_outcome(self, kept: list[NodeWithScore], outcome: GateOutcome) -> list[NodeWithScore]:
        returned = set(outcome.returned_ids)
        key = self.metadata_key
        return [
            _with_metadata(n, key, with_outcome(n.node.metadata[key], outcome))
            for n in kept
            if n.node.metadata[key]["memory_id"] in returned
        ]


def _with_metadata(node: NodeWithScore, key: str, value: dict[str, Any]) -> NodeWithScore:
    """An already annotated node with its ``key`` entry replaced (a new object)."""
    inner = node.node
    return NodeWithScore(
        node=inner.model_copy(update={"metadata": {**inner.metadata, key: value}}),
        score=node.score,
    )
