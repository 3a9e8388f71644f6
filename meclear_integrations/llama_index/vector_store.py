"""A small in-memory vector store that keeps the nodes' text, for offline agent memory.

``VectorMemoryBlock`` needs a vector store that stores text (``stores_text=True``); the
``SimpleVectorStore`` of llama-index-core keeps embeddings only. :class:`TextVectorStore`
keeps whole nodes in a dict and ranks them by cosine similarity of their embeddings: enough
for tests, cookbooks and single-process demos. Production memory uses a real vector store
integration (Chroma, Qdrant, pgvector...).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    VectorStoreQuery,
    VectorStoreQueryResult,
)
from pydantic import PrivateAttr

__all__ = ["TextVectorStore"]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=False)) / norm if norm else 0.0


def _matches(node: BaseNode, query: VectorStoreQuery) -> bool:
    """Exact-match metadata filters (``MetadataFilters`` with ``==`` filters, AND)."""
    if query.filters is None:
        return True
    for condition in query.filters.filters:
        key, value = getattr(condition, "key", None), getattr(condition, "value", None)
        if key is not None and node.metadata.get(key) != value:
            return False
    return True


class TextVectorStore(BasePydanticVectorStore):
    """In-memory vector store that returns whole nodes (text and metadata) on query.

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from llama_index.core.vector_stores.types import VectorStoreQuery
        >>> store = TextVectorStore()
        >>> _ = store.add([TextNode(id_="a", text="tea", embedding=[1.0, 0.0])])
        >>> store.query(VectorStoreQuery(query_embedding=[1.0, 0.0])).nodes[0].text
        'tea'
    """

    stores_text: bool = True
    """Query results carry the nodes themselves."""

    _nodes: dict[str, BaseNode] = PrivateAttr(default_factory=dict)

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearTextVectorStore"

    @property
    def client(self) -> Any:
        """No client: the nodes live in this object."""
        return None

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Keep ``nodes`` (each needs an embedding).

        Args:
            nodes: The nodes.
            **add_kwargs: Ignored.

        Returns:
            Their ids.

        Raises:
            ValueError: A node has no embedding.
        """
        for node in nodes:
            if node.embedding is None:
                raise ValueError(f"node {node.node_id} has no embedding")
            self._nodes[node.node_id] = node
        return [node.node_id for node in nodes]

    def get_nodes(
        self, node_ids: list[str] | None = None, filters: Any = None, **kwargs: Any
    ) -> list[BaseNode]:
        """The stored nodes (those of ``node_ids`` when given), in insertion order.

        Args:
            node_ids: The ids to return (None: all).
            filters: Exact-match ``MetadataFilters`` (None: none).
            **kwargs: Ignored.

        Returns:
            The nodes.
        """
        query = VectorStoreQuery(filters=filters)
        wanted = set(node_ids) if node_ids is not None else None
        return [
            node
            for node_id, node in self._nodes.items()
            if (wanted is None or node_id in wanted) and _matches(node, query)
        ]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Drop the nodes of the source document ``ref_doc_id`` (or the node with that id).

        Args:
            ref_doc_id: The document (or node) id.
            **delete_kwargs: Ignored.
        """
        for node_id, node in list(self._nodes.items()):
            if ref_doc_id in (node_id, node.ref_doc_id):
                del self._nodes[node_id]

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The ``similarity_top_k`` nodes closest to the query embedding that match its filters.

        Args:
            query: The query (embedding, top k, exact-match filters).
            **kwargs: Ignored.

        Returns:
            The nodes, their similarities and ids, closest first (ties: insertion order).
        """
        embedding = query.query_embedding or []
        scored = [
            (_cosine(embedding, node.embedding or []), position, node)
            for position, node in enumerate(self._nodes.values())
            if _matches(node, query)
        ]
        scored.sort(key=lambda s: (-s[0], s[1]))
        top = scored[: query.similarity_top_k]
        return VectorStoreQueryResult(
            nodes=[n for _, _, n in top],
            similarities=[s for s, _, _ in top],
            ids=[n.node_id for _, _, n in top],
        )
