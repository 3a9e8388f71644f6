"""Documents in, memories for the engine, new documents out (inputs never mutated)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document

from ..core.errors import InvalidRetrievalError
from ..core.memory import Memory
from ..pipeline.shaping import failed_metadata
from ..runtime.payloads import (
    assign_memory_ids,
)

__all__ = ["document_ids", "error_documents", "to_memories"]


def _usable(item: object) -> bool:
    return isinstance(item, Document) and isinstance(item.page_content, str)


def document_ids(documents: Sequence[object]) -> list[str]:
    """The memory ids of ``documents`` as :func:`to_memories` assigns them.

    Never raises: an unusable item gets ``invalid-<position>``.

    Args:
        documents: The retrieved items.

    Returns:
        One id per item, in order.
    """
    items: list[tuple[str | None, str]] = []
    for i, d in enumerate(documents):
        if isinstance(d, Document) and isinstance(d.page_content, str):
            items.append((d.id, d.page_content))
        else:
            items.append((f"invalid-{i}", ""))
    return assign_memory_ids(items)


def to_memories(documents: Sequence[Document]) -> tuple[list[Memory], list[str]]:
    """Memories for ``documents`` (id = ``Document.id`` or a content hash).

    Args:
        documents: The retrieved documents, in retrieval order.

    Returns:
        The memories and their ids, in retrieval order.

    Raises:
        InvalidRetrievalError: Naming the first item that is not a ``Document`` with text
            content.
    """
    for position, item in enumerate(documents):
        if not _usable(item):
            what = type(item).__name__
            if isinstance(item, Document):
                what = f"Document with page_content {type(item.page_content).__name__}"
            raise InvalidRetrievalError(
                f"the inner retriever returned a {what} at position {position}; "
                "expected Document objects with text page_content"
            )
    ids = assign_memory_ids((d.id, d.page_content) for d in documents)
    memories = [
        Memory(id=mid, content=d.page_content, metadata=dict(d.metadata))
        for mid, d in zip(ids, documents, strict=True)
    ]
    return memories, ids


def _copy(document: Document, key: str, value: dict[str, Any]) -> Document:
    return Document(
        page_content=document.page_content,
        metadata={**document.metadata, key: value},
        id=document.id,
    )


def error_documents(
    documents: Sequence[Document], ids: Sequence[str], error: BaseException, *, key: str
) -> list[Document]:
    """Every document, unchanged in content, marked with the clearance error (fail-open).

    The error text is redacted. An unusable item (not a ``Document`` with text) is returned
    as it came, unmarked.

    Args:
        documents: The retrieved documents.
        ids: Their memory ids.
        error: The failure that was absorbed.
        key: The metadata key of the per-memory results.

    Returns:
        New documents in the original order.
    """
    return [
        _copy(d, key, failed_metadata(mid, error)) if _usable(d) else d
        for d, mid in zip(documents, ids, strict=True)
    ]
