"""Stores with three memories and a ledger that proposes the stale one, per framework."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("sqlalchemy")

from meclear_integrations.ledger import HarmLedger
from tests.support.ledger import clear, memories

QUESTIONS = ("Where does Ana live?", "Which city is Ana's home?", "Ana lives where?")
IDS = ("g", "stale", "bg")


@dataclass
class Harness:
    """A store of one framework, what its retriever returns, and how to change it."""

    kind: str
    store: Any
    options: dict[str, Any]

    def retrieved(self) -> list[str]:
        """The ids a retriever over the store returns for the stale memory's text."""
        if self.kind == "langchain":
            return [d.id for d in self.store.similarity_search("text of stale", k=10)]
        if self.kind == "langgraph":
            return [i.key for i in self.store.search(self.options["namespace"], limit=10)]
        retriever = self.store.as_retriever(similarity_top_k=10)
        return [n.node.node_id for n in retriever.retrieve("text of stale")]

    def exact(self, memory_id: str) -> Any:
        """The memory as the store holds it: everything a reader of it sees."""
        if self.kind == "langchain":
            (doc,) = self.store.get_by_ids([memory_id])
            return (doc.id, doc.page_content, doc.metadata)
        if self.kind == "langgraph":
            item = self.store.get(self.options["namespace"], memory_id)
            return (item.namespace, item.key, item.value)
        node = self.store.docstore.get_node(memory_id)
        return (node.node_id, node.text, node.metadata, node.hash)

    def replace(self, memory_id: str, text: str) -> None:
        """Put another text under the id (an edit after the review)."""
        if self.kind == "langchain":
            from langchain_core.documents import Document

            self.store.add_documents([Document(id=memory_id, page_content=text)], ids=[memory_id])
        elif self.kind == "langgraph":
            self.store.put(self.options["namespace"], memory_id, {"content": text})
        else:
            from llama_index.core.schema import TextNode

            if self.store.docstore.get_node(memory_id, raise_error=False) is not None:
                self.store.delete_nodes([memory_id], delete_from_docstore=True)
            self.store.insert_nodes([TextNode(id_=memory_id, text=text)])

    def drop(self, memory_id: str) -> None:
        """Delete the memory behind the ledger's back (upstream)."""
        if self.kind == "langchain":
            self.store.delete(ids=[memory_id])
        elif self.kind == "langgraph":
            self.store.delete(self.options["namespace"], memory_id)
        else:
            self.store.delete_nodes([memory_id], delete_from_docstore=True)


def _langchain() -> Harness:
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(
        [
            Document(id=m.id, page_content=m.content, metadata={"source": "chat", "turn": i})
            for i, m in enumerate(memories(*IDS))
        ]
    )
    return Harness("langchain", store, {})


def _langgraph() -> Harness:
    pytest.importorskip("langgraph")
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore()
    namespace = ("users", "ana/ü 🙂 'x'")
    for i, m in enumerate(memories(*IDS)):
        store.put(namespace, m.id, {"content": m.content, "turn": i, "tags": ["a", "b"]})
    return Harness("langgraph", store, {"namespace": namespace})


def _llama_index() -> Harness:
    pytest.importorskip("llama_index.core")
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.schema import TextNode

    nodes = [
        TextNode(id_=m.id, text=m.content, metadata={"source": "chat", "turn": i})
        for i, m in enumerate(memories(*IDS))
    ]
    return Harness(
        "llama_index", VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8)), {}
    )


FACTORIES = {"langchain": _langchain, "langgraph": _langgraph, "llama_index": _llama_index}


@pytest.fixture(params=sorted(FACTORIES))
def harness(request) -> Harness:
    return FACTORIES[request.param]()


@pytest.fixture
def ledger(tmp_path):
    with HarmLedger(tmp_path / "ledger.db", store_text=True) as ledger:
        for q in QUESTIONS:
            context = memories(*IDS)
            ledger.record(clear(context, {"g"}, {"stale"}), query=q, context=context)
        yield ledger
