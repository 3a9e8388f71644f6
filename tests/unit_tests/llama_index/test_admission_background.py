"""LlamaIndex: admission off the write path (hidden and pending visibility)."""

from __future__ import annotations

from pathlib import Path

from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.jobs import AuditWorker
from meclear_integrations.llama_index.admission_background import BackgroundAdmissionWriter

CONTEXT = "user: I'm allergic to shellfish, so never suggest shrimp to me."


def release(writer: BackgroundAdmissionWriter) -> list:
    """Run every due admission job, as ``meclear worker`` would (no in-process threads)."""
    return AuditWorker(writer.job_queue, writer).run_until_idle()


def _nodes() -> list[TextNode]:
    return [
        TextNode(id_="m1", text="User is allergic to shellfish.", metadata={"src": "chat"}),
        TextNode(id_="m3", text="User is strictly vegetarian."),
    ]


def _index() -> VectorStoreIndex:
    return VectorStoreIndex(nodes=[], embed_model=MockEmbedding(embed_dim=8))


def test_hidden_nodes_enter_the_index_only_once_admitted(tmp_path: Path) -> None:
    index, model = _index(), ScriptedAdmissionModel()
    writer = BackgroundAdmissionWriter(
        index, ConMemAdmitter(model), jobs=tmp_path / "jobs.db", workers=0
    )
    tickets = writer.insert_nodes(_nodes(), context=CONTEXT)
    assert [t.status for t in tickets] == ["pending", "pending"] and model.calls == 0
    assert list(index.index_struct.nodes_dict) == []
    release(writer)
    assert list(index.index_struct.nodes_dict) == ["m1"]
    node = index.docstore.get_node("m1")
    assert node.metadata["meclear_admission"]["status"] == "admitted"
    assert node.metadata["src"] == "chat"
    assert "meclear_admission" in node.excluded_embed_metadata_keys
    assert writer.record(tickets[1].job_id).state == "rejected"


def test_pending_nodes_are_retrievable_marked_then_replaced_or_deleted(tmp_path: Path) -> None:
    index, model = _index(), ScriptedAdmissionModel()
    writer = BackgroundAdmissionWriter(
        index,
        ConMemAdmitter(model),
        jobs=tmp_path / "jobs.db",
        workers=0,
        visibility="pending",
    )
    writer.insert_nodes(_nodes(), context=CONTEXT)
    assert sorted(index.index_struct.nodes_dict) == ["m1", "m3"]
    assert index.docstore.get_node("m3").metadata["meclear_admission"]["status"] == "pending"
    release(writer)
    assert list(index.index_struct.nodes_dict) == ["m1"]
    assert index.docstore.get_node("m1").metadata["meclear_admission"]["status"] == "admitted"
    assert index.docstore.get_node("m3", raise_error=False) is None


def test_a_node_decided_in_another_process_is_rebuilt_from_the_job(tmp_path: Path) -> None:
    """The node travels in the job: a writer that never saw it (a worker process) inserts it,
    and a redelivered job leaves one node."""
    jobs = tmp_path / "jobs.db"
    app = BackgroundAdmissionWriter(
        _index(), ConMemAdmitter(ScriptedAdmissionModel()), jobs=jobs, workers=0
    )
    [ticket, _] = app.insert_nodes(_nodes(), context=CONTEXT)
    worker_index = _index()
    worker = BackgroundAdmissionWriter(
        worker_index, ConMemAdmitter(ScriptedAdmissionModel()), jobs=jobs, workers=0
    )
    release(worker)
    assert list(worker_index.index_struct.nodes_dict) == ["m1"]
    assert worker_index.docstore.get_node("m1").metadata["src"] == "chat"
    assert app.record(ticket.job_id).state == "stored"  # the app sees the worker's decision
    # redelivery of the finished job (at-least-once): still one node
    record = worker.background.records_store.get(ticket.job_id)
    assert record is not None
    worker.background.records_store.put(record[0], "m1", applied=False)  # died before marking
    from sqlalchemy import select

    from meclear_integrations.jobs.kinds import ADMISSION
    from meclear_integrations.jobs.store import jobs as table

    with worker.job_queue.engine.connect() as conn:
        payload = conn.execute(
            select(table.c.payload).where(table.c.job_id == ticket.job_id)
        ).scalar_one()
    assert worker.job_handlers()[ADMISSION](payload, ticket.job_id).state == "done"
    assert list(worker_index.index_struct.nodes_dict) == ["m1"]
    assert len(worker_index.docstore.docs) == 1
