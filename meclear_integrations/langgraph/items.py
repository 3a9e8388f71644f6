"""Store items as documents for the engine, and back (inputs never mutated).

A memory's id is its namespace and key, each label percent-encoded and joined by ``/``
(:func:`memory_id`): unambiguous for any label (``("a/b", "c")`` and ``("a", "b/c")`` differ),
stable across searches (the ledger finds the same memory again), readable in traces. Its
text is the value's first text field (``text_fields``), else the value as sorted JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from langchain_core.documents import Document
from langgraph.store.base import Item, SearchItem

__all__ = [
    "DEFAULT_TEXT_FIELDS",
    "item_text",
    "kept_items",
    "memory_id",
    "to_documents",
    "with_results",
]

DEFAULT_TEXT_FIELDS = ("content", "text", "memory", "page_content")
"""Value fields read as a memory's text, first string found wins."""


def memory_id(namespace: Sequence[str], key: str) -> str:
    """The memory id of the item at ``namespace`` / ``key`` (module docstring).

    Args:
        namespace: The item's namespace labels.
        key: The item's key.

    Returns:
        The labels and the key, percent-encoded, joined by ``/``.

    Example:
        >>> memory_id(("users", "a/b"), "k 1")
        'users/a%2Fb/k%201'
    """
    return "/".join(quote(str(part), safe="") for part in (*namespace, key))


def item_text(value: dict[str, Any], text_fields: Sequence[str]) -> str:
    """The text the agent and the judge read for a stored value.

    Args:
        value: The item's value.
        text_fields: Fields tried in order; the first holding a string is the text.

    Returns:
        That string, else the value as sorted JSON.
    """
    for field in text_fields:
        text = value.get(field)
        if isinstance(text, str):
            return text
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def to_documents(items: Sequence[SearchItem], text_fields: Sequence[str]) -> list[Document]:
    """One document per item, in order (id: :func:`memory_id`; namespace and key in metadata).

    Args:
        items: The search results.
        text_fields: See :func:`item_text`.

    Returns:
        The documents.
    """
    return [
        Document(
            page_content=item_text(item.value, text_fields),
            id=memory_id(item.namespace, item.key),
            metadata={"namespace": list(item.namespace), "key": item.key},
        )
        for item in items
    ]


def with_results(item: SearchItem, key: str, results: dict[str, Any]) -> SearchItem:
    """A copy of ``item`` whose value carries the clearance results under ``key``.

    Args:
        item: The kept item.
        key: The value key of the results.
        results: The per-memory results.

    Returns:
        The new item.
    """
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value={**item.value, key: results},
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=item.score,
    )


def kept_items(
    items: Sequence[SearchItem], kept: Sequence[Document], *, key: str, annotate: bool
) -> list[SearchItem]:
    """The items behind the kept documents, in the order clearance returned them.

    Args:
        items: The search results.
        kept: The documents clearance returned.
        key: The metadata key of the per-memory results.
        annotate: Copy the results into each returned item's value under ``key``.

    Returns:
        The items (the originals unless ``annotate``).
    """
    by_id: dict[str, Item] = {memory_id(i.namespace, i.key): i for i in items}
    out = []
    for document in kept:
        item = by_id[str(document.id)]
        assert isinstance(item, SearchItem)
        out.append(with_results(item, key, document.metadata.get(key, {})) if annotate else item)
    return out
