"""TextVectorStore: whole nodes back, closest first, exact-match filters, deletes."""

from __future__ import annotations

import pytest
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import (
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

from meclear_integrations.llama_index.vector_store import TextVectorStore


def node(id_: str, vector: list[float], **metadata: str) -> TextNode:
    return TextNode(id_=id_, text=f"text {id_}", embedding=vector, metadata=metadata)


def test_query_ranks_filters_and_deletes() -> None:
    store = TextVectorStore()
    doc = node("c", [0.0, 1.0], session_id="s2")
    doc.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id="doc-1")
    assert store.add(
        [node("a", [1.0, 0.0], session_id="s1"), node("b", [0.7, 0.7], session_id="s1"), doc]
    ) == ["a", "b", "c"]
    result = store.query(VectorStoreQuery(query_embedding=[1.0, 0.1], similarity_top_k=2))
    assert result.ids == ["a", "b"] and result.nodes[0].text == "text a"
    assert result.similarities[0] > result.similarities[1]
    only = MetadataFilters(filters=[MetadataFilter(key="session_id", value="s2")])
    assert store.query(VectorStoreQuery(query_embedding=[1.0, 0.0], filters=only)).ids == ["c"]
    assert [n.node_id for n in store.get_nodes()] == ["a", "b", "c"]
    assert [n.node_id for n in store.get_nodes(node_ids=["c", "a"])] == ["a", "c"]
    assert [n.node_id for n in store.get_nodes(filters=only)] == ["c"]
    store.delete("doc-1")  # by source document
    store.delete("a")  # by node id
    assert store.query(VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=5)).ids == [
        "b"
    ]
    with pytest.raises(ValueError, match="no embedding"):
        store.add([TextNode(id_="x", text="no vector")])
