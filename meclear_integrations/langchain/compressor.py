"""MeClear as a ``BaseDocumentCompressor`` for ``ContextualCompressionRetriever`` users.

Same fields, run tree, events, metadata and edge-case policy as ``ClearingRetriever``;
the documents come from the compression retriever's base retriever. The reference answer
comes from the config metadata of the enclosing run (``reference_config``).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict

from .clearance import ClearanceSettings

__all__ = ["MeClearCompressor"]


class MeClearCompressor(ClearanceSettings, BaseDocumentCompressor):
    """Verified clearance of the retrieved documents (returns new documents, kept only)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Clear ``documents`` for ``query``: the kept ones, as new documents.

        Args:
            documents: The retrieved documents.
            query: The query they were retrieved for.
            callbacks: The callbacks of the enclosing run.

        Returns:
            The kept documents in their original order, results under ``metadata_key``.
        """
        return self._clear_documents(query, list(documents), callbacks)

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Async :meth:`compress_documents` (agent and judge awaited on the loop).

        Args:
            documents: The retrieved documents.
            query: The query they were retrieved for.
            callbacks: The callbacks of the enclosing run.

        Returns:
            The kept documents in their original order, results under ``metadata_key``.
        """
        return await self._aclear_documents(query, list(documents), callbacks)
