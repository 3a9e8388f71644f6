"""Write-back adapter for a LlamaIndex ``VectorStoreIndex``.

Memory id = the node id (``node.node_id``, what ``MeClearPostprocessor`` records). A retired
node is deleted from the index (``delete_nodes([id], delete_from_docstore=True)``: the
vector store and the docstore), so no retriever over the index returns it, and kept whole
in the tombstone (LlamaIndex's own node JSON: id, text, metadata, relationships, hash); a
restore inserts it again (``insert_nodes``): the same node, embedded again by the index's
embedding model. Nodes are read from the docstore, or from the vector store when it keeps
the text itself (``get_nodes``).
"""

from __future__ import annotations

from typing import Any

from ..core.errors import ConfigurationError
from .base import StoreAdapter, StoredMemory

__all__ = ["IndexAdapter"]


class IndexAdapter(StoreAdapter):
    """Reads, deletes and re-inserts nodes of a LlamaIndex ``VectorStoreIndex`` by id.

    Args:
        index: The index.

    Raises:
        ConfigurationError: ``index`` is not a ``VectorStoreIndex``.
    """

    def __init__(self, index: Any) -> None:
        from llama_index.core import VectorStoreIndex

        if not isinstance(index, VectorStoreIndex):
            raise ConfigurationError(f"expected a VectorStoreIndex, got {type(index)!r}")
        self.index = index
        self.label = f"llama_index:{type(index.vector_store).__name__}"

    def _node(self, memory_id: str) -> Any:
        vector_store = self.index.vector_store
        if vector_store.stores_text and not getattr(self.index, "_store_nodes_override", False):
            try:
                nodes = vector_store.get_nodes(node_ids=[memory_id])
            except NotImplementedError as exc:
                raise ConfigurationError(
                    f"{type(vector_store).__name__} cannot read nodes back by id "
                    "(get_nodes): reviews cannot be written back to it"
                ) from exc
            return next((n for n in nodes or [] if n.node_id == memory_id), None)
        return self.index.docstore.get_node(memory_id, raise_error=False)

    def _stored(self, memory_id: str, node: Any) -> StoredMemory | None:
        if node is None:
            return None
        from llama_index.core.schema import MetadataMode
        from llama_index.core.storage.docstore.utils import doc_to_json

        text = node.get_content(metadata_mode=MetadataMode.NONE)
        payload = doc_to_json(node)
        payload["__data__"].pop("embedding", None)  # recomputed by the index on restore
        return StoredMemory(memory_id, text, {"node": payload})

    @staticmethod
    def _decode(payload: dict[str, Any]) -> Any:
        from llama_index.core.storage.docstore.utils import json_to_doc

        return json_to_doc(payload["node"])

    def fetch(self, memory_id: str) -> StoredMemory | None:
        """The node with this id, or None."""
        return self._stored(memory_id, self._node(memory_id))

    def remove(self, memory_id: str) -> None:
        """Delete the node from the vector store and the docstore."""
        self.index.delete_nodes([memory_id], delete_from_docstore=True)

    def put_back(self, payload: dict[str, Any]) -> None:
        """Insert the node again."""
        self.index.insert_nodes([self._decode(payload)])

    async def aremove(self, memory_id: str) -> None:
        """Async :meth:`remove` (``adelete_nodes``)."""
        await self.index.adelete_nodes([memory_id], delete_from_docstore=True)

    async def aput_back(self, payload: dict[str, Any]) -> None:
        """Async :meth:`put_back` (``ainsert_nodes``)."""
        await self.index.ainsert_nodes([self._decode(payload)])
