"""Write-back adapter for a LangChain ``VectorStore`` (``InMemoryVectorStore``, Chroma, ...).

Memory id = ``Document.id`` (the id ``ClearingRetriever`` records). A retired document is
deleted from the store (``delete(ids=[id])``), so no retriever over the store returns it
again, and kept whole in the tombstone (id, ``page_content``, ``metadata``); a restore adds
it back with ``add_documents([document], ids=[id])``: the same id, text and metadata, its
embedding computed again by the store's embedding model. The store must implement
``get_by_ids`` (``InMemoryVectorStore`` and most LangChain partner stores do).
"""

from __future__ import annotations

from typing import Any

from ..core.errors import ConfigurationError
from .base import StoreAdapter, StoredMemory

__all__ = ["VectorStoreAdapter"]


def _encode(document: Any) -> dict[str, Any]:
    return {
        "id": document.id,
        "page_content": document.page_content,
        "metadata": dict(document.metadata),
    }


class VectorStoreAdapter(StoreAdapter):
    """Reads, deletes and re-adds documents of a LangChain ``VectorStore`` by id.

    Args:
        store: The vector store.

    Raises:
        ConfigurationError: The store does not implement ``get_by_ids``.
    """

    def __init__(self, store: Any) -> None:
        from langchain_core.vectorstores import VectorStore

        if not isinstance(store, VectorStore):
            raise ConfigurationError(f"expected a LangChain VectorStore, got {type(store)!r}")
        if type(store).get_by_ids is VectorStore.get_by_ids:
            raise ConfigurationError(
                f"{type(store).__name__} does not implement get_by_ids: reviews cannot be "
                "written back to it (the memory could not be kept for a restore)"
            )
        self.store = store
        self.label = f"langchain:{type(store).__name__}"

    @staticmethod
    def _found(documents: Any, memory_id: str) -> StoredMemory | None:
        for document in documents:
            if document.id == memory_id:
                return StoredMemory(memory_id, document.page_content, _encode(document))
        return None

    @staticmethod
    def _document(payload: dict[str, Any]) -> Any:
        from langchain_core.documents import Document

        return Document(
            id=payload["id"], page_content=payload["page_content"], metadata=payload["metadata"]
        )

    def fetch(self, memory_id: str) -> StoredMemory | None:
        """The document with this id, or None."""
        return self._found(self.store.get_by_ids([memory_id]), memory_id)

    def remove(self, memory_id: str) -> None:
        """Delete the document (``delete`` returning False is a refusal)."""
        if self.store.delete(ids=[memory_id]) is False:
            raise RuntimeError("delete returned False")

    def put_back(self, payload: dict[str, Any]) -> None:
        """Add the document back under its id."""
        self.store.add_documents([self._document(payload)], ids=[payload["id"]])

    async def afetch(self, memory_id: str) -> StoredMemory | None:
        """Async :meth:`fetch` (``aget_by_ids``)."""
        return self._found(await self.store.aget_by_ids([memory_id]), memory_id)

    async def aremove(self, memory_id: str) -> None:
        """Async :meth:`remove` (``adelete``)."""
        if await self.store.adelete(ids=[memory_id]) is False:
            raise RuntimeError("adelete returned False")

    async def aput_back(self, payload: dict[str, Any]) -> None:
        """Async :meth:`put_back` (``aadd_documents``)."""
        await self.store.aadd_documents([self._document(payload)], ids=[payload["id"]])
