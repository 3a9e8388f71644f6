"""LangChain: admission off the write path (hidden and pending visibility)."""

from __future__ import annotations

from pathlib import Path

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.jobs import AuditWorker
from meclear_integrations.jobs.kinds import ADMISSION
from meclear_integrations.langchain.admission_background import BackgroundAdmissionGate
from meclear_integrations.runtime.hashing import content_hash

CONTEXT = [
    {"role": "user", "content": "I'm allergic to shellfish, so never suggest shrimp to me."},
    {"role": "assistant", "content": "Noted: no shellfish."},
]
DOCS = [
    Document(id="m1", page_content="User is allergic to shellfish.", metadata={"src": "chat"}),
    Document(id="m3", page_content="User is strictly vegetarian."),
]


def release(gate: BackgroundAdmissionGate) -> list:
    """Run every due admission job, as ``meclear worker`` would (no in-process threads)."""
    return AuditWorker(gate.job_queue, gate).run_until_idle()


def _gate(visibility: str, tmp_path: Path, model: ScriptedAdmissionModel):
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    gate = BackgroundAdmissionGate(
        store, ConMemAdmitter(model), visibility=visibility, jobs=tmp_path / "jobs.db", workers=0
    )
    return store, gate


def test_hidden_documents_are_not_retrievable_until_admitted(tmp_path: Path) -> None:
    model = ScriptedAdmissionModel()
    store, gate = _gate("hidden", tmp_path, model)
    tickets = gate.add_documents(DOCS, context=CONTEXT)
    assert [t.status for t in tickets] == ["pending", "pending"]
    assert model.calls == 0 and store.get_by_ids(["m1", "m3"]) == []
    release(gate)
    kept = store.get_by_ids(["m1", "m3"])
    assert [d.id for d in kept] == ["m1"]
    status = kept[0].metadata["meclear_admission"]
    assert status["status"] == "admitted" and status["decision"] == "store"
    assert kept[0].metadata["src"] == "chat"
    assert gate.record(tickets[1].job_id).state == "rejected"


def test_pending_documents_are_retrievable_marked_and_removed_when_rejected(
    tmp_path: Path,
) -> None:
    model = ScriptedAdmissionModel()
    store, gate = _gate("pending", tmp_path, model)
    gate.add_documents(DOCS, context=CONTEXT)
    assert model.calls == 0
    before = store.get_by_ids(["m1", "m3"])
    assert [d.metadata["meclear_admission"]["status"] for d in before] == ["pending", "pending"]
    release(gate)
    after = store.get_by_ids(["m1", "m3"])
    assert [(d.id, d.metadata["meclear_admission"]["status"]) for d in after] == [
        ("m1", "admitted")
    ]


def test_the_default_durable_queue_and_workers_drain(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the default job table: the ledger's file in the cwd
    monkeypatch.delenv("MECLEAR_LEDGER_URL", raising=False)
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    gate = BackgroundAdmissionGate(store, ConMemAdmitter(ScriptedAdmissionModel()))
    gate.add_documents([DOCS[0]], context=CONTEXT)
    assert gate.drain(timeout=30)
    assert [d.id for d in store.get_by_ids(["m1"])] == ["m1"]
    gate.close()  # joins the worker threads (they settle the job after its record)
    assert gate.job_queue.stats(ADMISSION)["done"] == 1
    assert (tmp_path / "meclear-ledger.db").exists()  # durable: beside the ledger


def test_a_document_without_id_is_stored_once_under_its_content_hash(tmp_path: Path) -> None:
    store, gate = _gate("hidden", tmp_path, ScriptedAdmissionModel())
    doc = Document(page_content="User is allergic to shellfish.")
    [ticket] = gate.add_documents([doc], context=CONTEXT)
    assert ticket.candidate_id == content_hash(doc.page_content)
    release(gate)
    known = gate.background.records_store.get(ticket.job_id)
    assert known is not None and known[1]  # decided and applied
    # a worker that wrote the document and died before marking it applied: redelivered
    gate.background.records_store.put(known[0], ticket.candidate_id or "", applied=False)
    again = gate.background.run(_job(gate, ticket.job_id))
    assert again.state == "done"
    assert len(store.store) == 1 and ticket.candidate_id in store.store


def _job(gate: BackgroundAdmissionGate, job_id: str):
    from sqlalchemy import select

    from meclear_integrations.admission.background_models import AdmissionJob
    from meclear_integrations.jobs.store import jobs

    with gate.job_queue.engine.connect() as conn:
        payload = conn.execute(select(jobs.c.payload).where(jobs.c.job_id == job_id)).scalar_one()
    return AdmissionJob.loads(payload, job_id)


def test_a_document_without_context_is_refused_before_anything_is_queued(
    tmp_path: Path,
) -> None:
    import pytest

    from meclear_integrations.core.errors import ConfigurationError

    _store, gate = _gate("hidden", tmp_path, ScriptedAdmissionModel())
    with pytest.raises(ConfigurationError, match="document 1 has no"):
        gate.add_documents(
            [DOCS[0].model_copy(update={"metadata": {"historical_context": "x"}}), DOCS[1]]
        )
    assert gate.job_queue.stats() == {"queued": 0, "running": 0, "done": 0, "dead": 0}
