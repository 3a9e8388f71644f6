"""LangChain: admission off the write path (hidden and pending visibility)."""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.langchain.admission_background import BackgroundAdmissionGate

CONTEXT = [
    {"role": "user", "content": "I'm allergic to shellfish, so never suggest shrimp to me."},
    {"role": "assistant", "content": "Noted: no shellfish."},
]
DOCS = [
    Document(id="m1", page_content="User is allergic to shellfish.", metadata={"src": "chat"}),
    Document(id="m3", page_content="User is strictly vegetarian."),
]


class Blocking:
    """Queues work until released, so the test can look at the store in between."""

    def __init__(self) -> None:
        self.queued = []

    def submit(self, job_id, work) -> None:
        self.queued.append(work)

    def release(self) -> None:
        while self.queued:
            self.queued.pop(0)()


def _gate(visibility: str, executor: Blocking, model: ScriptedAdmissionModel):
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    gate = BackgroundAdmissionGate(
        store, ConMemAdmitter(model), visibility=visibility, executor=executor
    )
    return store, gate


def test_hidden_documents_are_not_retrievable_until_admitted() -> None:
    executor, model = Blocking(), ScriptedAdmissionModel()
    store, gate = _gate("hidden", executor, model)
    tickets = gate.add_documents(DOCS, context=CONTEXT)
    assert [t.status for t in tickets] == ["pending", "pending"]
    assert model.calls == 0 and store.get_by_ids(["m1", "m3"]) == []
    executor.release()
    kept = store.get_by_ids(["m1", "m3"])
    assert [d.id for d in kept] == ["m1"]
    status = kept[0].metadata["meclear_admission"]
    assert status["status"] == "admitted" and status["decision"] == "store"
    assert kept[0].metadata["src"] == "chat"
    assert gate.record(tickets[1].job_id).state == "rejected"


def test_pending_documents_are_retrievable_marked_and_removed_when_rejected() -> None:
    executor, model = Blocking(), ScriptedAdmissionModel()
    store, gate = _gate("pending", executor, model)
    gate.add_documents(DOCS, context=CONTEXT)
    assert model.calls == 0
    before = store.get_by_ids(["m1", "m3"])
    assert [d.metadata["meclear_admission"]["status"] for d in before] == ["pending", "pending"]
    executor.release()
    after = store.get_by_ids(["m1", "m3"])
    assert [(d.id, d.metadata["meclear_admission"]["status"]) for d in after] == [
        ("m1", "admitted")
    ]


def test_default_executor_drains() -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    gate = BackgroundAdmissionGate(store, ConMemAdmitter(ScriptedAdmissionModel()))
    gate.add_documents([DOCS[0]], context=CONTEXT)
    assert gate.drain(timeout=30)
    assert [d.id for d in store.get_by_ids(["m1"])] == ["m1"]
    gate.close()
