"""The background audit's own runs are internal, like the inline clearance's evaluator calls.

A tracer (LangSmith from the environment, a run collector, a global handler) sees the audit
run and every model run inside it tagged ``meclear:internal`` in LangChain; in LlamaIndex
every event and span the audit dispatches carries ``{"meclear": "internal"}``. So a
dashboard or a streaming UI filters the audits out with the same tag it already uses for
the inline clearance's internal calls, and the user-facing request's runs stay untagged.
"""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from langchain_core.tracers.context import collect_runs
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.schema import NodeWithScore, TextNode
from pydantic import Field

from meclear_integrations.langchain import (
    INTERNAL_TAG,
    ClearingRetriever,
    SimulatedChatModel,
    reference_config,
)
from meclear_integrations.llama_index import MeClearPostprocessor, SimulatedLLM
from meclear_integrations.llama_index.events import INTERNAL_TAG as LLAMA_INTERNAL_TAG
from meclear_integrations.simulation import SimulatedCase


def _walk(run: Any) -> list[Any]:
    return [run, *(r for child in run.child_runs for r in _walk(child))]


def test_langchain_audit_runs_carry_the_internal_tag(case: SimulatedCase, ledger) -> None:
    documents = [Document(page_content=m.content, id=m.id) for m in case.memories]
    component = ClearingRetriever(
        retriever=RunnableLambda(lambda q: documents),
        llm=SimulatedChatModel.from_case(case),
        mode="background",
        loop={"ledger": ledger, "audit_workers": 0},
    )
    try:
        with collect_runs() as request:
            # the request path: user-facing, untagged
            component.invoke(case.query, config=reference_config(case.reference))
        assert request.traced_runs
        assert all(INTERNAL_TAG not in (r.tags or []) for r in request.traced_runs)

        with collect_runs() as audits:
            outcomes = component.run_audits()
        assert [o.state for o in outcomes] == ["done"]
        runs = [r for root in audits.traced_runs for r in _walk(root)]
        models = [r for r in runs if r.run_type in {"llm", "chat_model"}]
        assert len(models) >= 10  # the audit's agent and judge calls were traced
        untagged = [r.name for r in runs if INTERNAL_TAG not in (r.tags or [])]
        assert untagged == []
        assert ledger.find_run(outcomes[0].ledger_run_id).recovered
    finally:
        component.close()


class _Tags(BaseEventHandler):
    """The instrument tags of every LlamaIndex event."""

    seen: list[dict[str, Any]] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "AuditTags"

    def handle(self, event: Any, **kwargs: Any) -> None:
        self.seen.append(dict(event.tags))


def test_llama_index_audit_events_carry_the_internal_tag(case: SimulatedCase, ledger) -> None:
    nodes = [NodeWithScore(node=TextNode(id_=m.id, text=m.content)) for m in case.memories]
    component = MeClearPostprocessor(
        llm=SimulatedLLM.from_case(case),
        mode="background",
        reference=case.reference,
        loop={"ledger": ledger, "audit_workers": 0},
    )
    root = get_dispatcher()
    handler = _Tags()
    root.add_event_handler(handler)
    try:
        component.postprocess_nodes(nodes, query_str=case.query)
        request = list(handler.seen)
        assert request and all(t.get("meclear") != "internal" for t in request)
        handler.seen.clear()
        outcomes = component.run_audits()
        assert [o.state for o in outcomes] == ["done"]
        assert len(handler.seen) >= 10  # the audit's LLM calls and stage events
        assert all(t.get("meclear") == LLAMA_INTERNAL_TAG["meclear"] for t in handler.seen)
        assert ledger.find_run(outcomes[0].ledger_run_id).recovered
    finally:
        root.event_handlers.remove(handler)
        component.close()
