"""Write-back adapter for a LangGraph ``BaseStore`` (``InMemoryStore``, ``PostgresStore``).

An item lives at a namespace (a tuple of labels) and a key. Memory id = the item's key in
the adapter's ``namespace``; ids that carry the namespace themselves are mapped with
``split`` (id -> (namespace, key)). A retired item is deleted (``delete(namespace, key)``,
so ``search`` / ``get`` no longer return it) and kept whole in the tombstone (namespace,
key, value); a restore puts the same value back at the same namespace and key (its
``created_at`` is the restore's time: the store sets it). The text whose content hash the
ledger checks is ``text_of(value)``: by default the value's ``"content"`` or ``"text"``
string, else its JSON with sorted keys. LangGraph is imported only by the store you pass.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ..core.errors import ConfigurationError
from .base import StoreAdapter, StoredMemory

__all__ = ["GraphStoreAdapter", "default_text"]


def default_text(value: dict[str, Any]) -> str:
    """The text of an item's value: ``content`` or ``text`` when a string, else its JSON.

    Args:
        value: The item's value.

    Returns:
        The text the content hash is computed over.
    """
    for field in ("content", "text"):
        if isinstance(value.get(field), str):
            return str(value[field])
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


class GraphStoreAdapter(StoreAdapter):
    """Reads, deletes and puts back items of a LangGraph ``BaseStore`` by key.

    Args:
        store: The LangGraph store.
        namespace: The namespace the memory ids are keys in.
        split: Maps a memory id to (namespace, key) instead (ids carrying their namespace).
        text_of: The text of an item's value (default :func:`default_text`).

    Raises:
        ConfigurationError: Neither or both of ``namespace`` and ``split`` are given, or
            ``namespace`` is empty or not strings.
    """

    def __init__(
        self,
        store: Any,
        namespace: Sequence[str] | None = None,
        *,
        split: Callable[[str], tuple[tuple[str, ...], str]] | None = None,
        text_of: Callable[[dict[str, Any]], str] = default_text,
    ) -> None:
        if (namespace is None) == (split is None):
            raise ConfigurationError("give the store's namespace, or split= (id -> namespace, key)")
        if namespace is not None and (
            isinstance(namespace, str)
            or not namespace
            or not all(isinstance(p, str) and p for p in namespace)
        ):
            raise ConfigurationError(
                f"namespace must be a non-empty tuple of non-empty strings, got {namespace!r}"
            )
        self.store = store
        self.namespace = tuple(namespace) if namespace is not None else None
        self.split = split
        self.text_of = text_of
        self.label = f"langgraph:{type(store).__name__}"

    def _where(self, memory_id: str) -> tuple[tuple[str, ...], str]:
        if self.split is not None:
            namespace, key = self.split(memory_id)
            return tuple(namespace), key
        assert self.namespace is not None
        return self.namespace, memory_id

    def _found(self, memory_id: str, item: Any) -> StoredMemory | None:
        if item is None:
            return None
        value = dict(item.value)
        payload = {"namespace": list(item.namespace), "key": item.key, "value": value}
        return StoredMemory(memory_id, self.text_of(value), payload)

    def fetch(self, memory_id: str) -> StoredMemory | None:
        """The item at this memory's namespace and key, or None."""
        return self._found(memory_id, self.store.get(*self._where(memory_id)))

    def remove(self, memory_id: str) -> None:
        """Delete the item."""
        self.store.delete(*self._where(memory_id))

    def put_back(self, payload: dict[str, Any]) -> None:
        """Put the value back at its namespace and key."""
        self.store.put(tuple(payload["namespace"]), payload["key"], payload["value"])

    async def afetch(self, memory_id: str) -> StoredMemory | None:
        """Async :meth:`fetch` (``aget``)."""
        return self._found(memory_id, await self.store.aget(*self._where(memory_id)))

    async def aremove(self, memory_id: str) -> None:
        """Async :meth:`remove` (``adelete``)."""
        await self.store.adelete(*self._where(memory_id))

    async def aput_back(self, payload: dict[str, Any]) -> None:
        """Async :meth:`put_back` (``aput``)."""
        await self.store.aput(tuple(payload["namespace"]), payload["key"], payload["value"])
