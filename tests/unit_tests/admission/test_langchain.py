"""LangChain: the gate stores exactly the admitted documents; events reach handlers."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

pytest.importorskip("langchain_core")

from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.cases import load_admission_cases
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.langchain.admission import (
    ADMISSION_EVENT,
    AdmissionGate,
    AdmissionRunnable,
    admitter_from_langchain,
)
from tests.support.stage_models import StageModel


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any], UUID]] = []
        self.chains: dict[UUID, str] = {}

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, **kw: Any) -> None:
        self.chains[run_id] = kw.get("name") or ""

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append((name, data, run_id))


class AsyncEvents(AsyncCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    async def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kw: Any) -> None:
        self.events.append((name, data))


def sample_documents(n: int = 8) -> tuple[list[Document], dict[str, str]]:
    cases = load_admission_cases().cases
    picked = cases[:4] + cases[15 : 15 + n - 4]
    docs = [
        Document(
            id=c.id,
            page_content=c.candidate_memory,
            metadata={"historical_context": c.context(), "source": "chat"},
        )
        for c in picked
    ]
    return docs, {c.id: c.label for c in picked}


def scripted_chat() -> RunnableLambda:
    """A LangChain runnable over the scripted stand-in (exercises the text-model adapter)."""
    model = ScriptedAdmissionModel()
    return RunnableLambda(model.complete, afunc=model.acomplete)


def test_gate_stores_exactly_the_admitted_documents() -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    gate = AdmissionGate(store, admitter_from_langchain(scripted_chat()))
    docs, _ = sample_documents()
    before = [d.model_copy(deep=True) for d in docs]
    handler = Events()
    result = gate.add_documents(docs, config={"callbacks": [handler]})
    admitted = {d.candidate_id for d in result.decisions if d.decision == "store"}
    assert admitted and admitted != {d.id for d in docs}  # a real filter
    assert set(store.store) == admitted == set(result.added_ids)
    for doc_id in admitted:
        stored = store.store[doc_id]
        assert stored["metadata"]["meclear_admission"]["decision"] == "store"
        assert stored["metadata"]["source"] == "chat"
    assert docs == before  # inputs untouched
    names = [n for n, _, _ in handler.events]
    assert names == [ADMISSION_EVENT] * len(docs)
    assert [e["candidate_id"] for _, e, _ in handler.events] == [d.id for d in docs]
    # every event is attributed to the AdmissionRunnable's run
    runs = {run for _, _, run in handler.events}
    assert len(runs) == 1 and handler.chains[runs.pop()] == "AdmissionRunnable"


async def test_async_gate_matches_the_sync_gate() -> None:
    docs, _ = sample_documents()
    sync_store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    AdmissionGate(sync_store, admitter_from_langchain(scripted_chat())).add_documents(docs)
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    handler = AsyncEvents()
    gate = AdmissionGate(store, admitter_from_langchain(scripted_chat()))
    result = await gate.aadd_documents(docs, config={"callbacks": [handler]})
    assert set(store.store) == set(sync_store.store) == set(result.added_ids)
    assert sorted(e["candidate_id"] for _, e in handler.events) == sorted(d.id for d in docs)


def test_failed_decisions_are_kept_out_by_default_and_admitted_on_request() -> None:
    docs = [
        Document(
            id="x",
            page_content="User likes tea.",
            metadata={"historical_context": "user: I like tea."},
        )
    ]
    broken = ConMemAdmitter(StageModel(overrides={"audit": lambda p: "no json"}))
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    result = AdmissionGate(store, broken).add_documents(docs)
    assert result.decisions[0].error.stage == "audit" and store.store == {}
    result = AdmissionGate(store, broken, on_error="admit").add_documents(docs)
    assert set(store.store) == {"x"} and result.added_ids == ["x"]


def test_runnable_maps_documents_to_decisions_and_uses_a_default_context() -> None:
    runnable = AdmissionRunnable(admitter=ConMemAdmitter(StageModel()), context="user: I'm vegan.")
    decisions = runnable.invoke([Document(page_content="User is vegan.")])
    assert len(decisions) == 1 and decisions[0].decision == "store"
    assert decisions[0].candidate_id == "doc-0"
    with pytest.raises(ValueError, match="historical_context"):
        AdmissionRunnable(admitter=ConMemAdmitter(StageModel())).invoke(
            [Document(page_content="x")]
        )


async def test_runnable_streams_custom_events() -> None:
    runnable = AdmissionRunnable(admitter=ConMemAdmitter(StageModel()), context="user: hi")
    events = [
        e
        async for e in runnable.astream_events(
            [Document(page_content="User is vegan.")], version="v2"
        )
        if e["event"] == "on_custom_event"
    ]
    assert [e["name"] for e in events] == [ADMISSION_EVENT]
    assert events[0]["data"]["decision"] == "store"
