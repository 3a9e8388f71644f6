"""LlamaIndex: admission off the write path (hidden and pending visibility)."""

from __future__ import annotations

from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.llama_index.admission_background import BackgroundAdmissionWriter

CONTEXT = "user: I'm allergic to shellfish, so never suggest shrimp to me."


class Blocking:
    def __init__(self) -> None:
        self.queued = []

    def submit(self, job_id, work) -> None:
        self.queued.append(work)

    def release(self) -> None:
        while self.queued:
            self.queued.pop(0)()


def _nodes() -> list[TextNode]:
    return [
        TextNode(id_="m1", text="User is allergic to shellfish.", metadata={"src": "chat"}),
        TextNode(id_="m3", text="User is strictly vegetarian."),
    ]


def _index() -> VectorStoreIndex:
    return VectorStoreIndex(nodes=[], embed_model=MockEmbedding(embed_dim=8))


def test_hidden_nodes_enter_the_index_only_once_admitted() -> None:
    index, executor, model = _index(), Blocking(), ScriptedAdmissionModel()
    writer = BackgroundAdmissionWriter(index, ConMemAdmitter(model), executor=executor)
    tickets = writer.insert_nodes(_nodes(), context=CONTEXT)
    assert [t.status for t in tickets] == ["pending", "pending"] and model.calls == 0
    assert list(index.index_struct.nodes_dict) == []
    executor.release()
    assert list(index.index_struct.nodes_dict) == ["m1"]
    node = index.docstore.get_node("m1")
    assert node.metadata["meclear_admission"]["status"] == "admitted"
    assert node.metadata["src"] == "chat"
    assert "meclear_admission" in node.excluded_embed_metadata_keys
    assert writer.record(tickets[1].job_id).state == "rejected"


def test_pending_nodes_are_retrievable_marked_then_replaced_or_deleted() -> None:
    index, executor, model = _index(), Blocking(), ScriptedAdmissionModel()
    writer = BackgroundAdmissionWriter(
        index, ConMemAdmitter(model), executor=executor, visibility="pending"
    )
    writer.insert_nodes(_nodes(), context=CONTEXT)
    assert sorted(index.index_struct.nodes_dict) == ["m1", "m3"]
    assert index.docstore.get_node("m3").metadata["meclear_admission"]["status"] == "pending"
    executor.release()
    assert list(index.index_struct.nodes_dict) == ["m1"]
    assert index.docstore.get_node("m1").metadata["meclear_admission"]["status"] == "admitted"
    assert index.docstore.get_node("m3", raise_error=False) is None
