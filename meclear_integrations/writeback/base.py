"""What a memory store must offer to have reviews written back: :class:`StoreAdapter`.

An adapter reads one memory by id (its text, for the content-hash check, and an exact
JSON encoding of it, kept in the tombstone), removes it, and puts an encoded memory back
under its id. Sync methods are required; the async twins default to running the sync ones
in a worker thread and are overridden where the store has native async methods.
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from ..core.errors import ConfigurationError

__all__ = ["StoreAdapter", "StoredMemory", "exact_json"]


@dataclass(frozen=True, slots=True)
class StoredMemory:
    """One memory as the store holds it."""

    memory_id: str
    """Its id in the store."""
    text: str
    """Its text (what the ledger's content hash is computed over)."""
    payload: dict[str, Any]
    """Its exact JSON encoding (:meth:`StoreAdapter.put_back` restores it from this)."""


def exact_json(payload: dict[str, Any], what: str) -> dict[str, Any]:
    """``payload`` after a JSON round trip, refused unless it comes back equal.

    A tombstone must give back exactly what was removed: a memory whose metadata JSON
    cannot hold (a datetime, bytes, a custom object) is refused before anything is removed.

    Args:
        payload: The encoding.
        what: The memory, for the message.

    Returns:
        The round-tripped copy (what the ledger will store).

    Raises:
        ConfigurationError: The encoding does not survive a JSON round trip.
    """
    try:
        copy = json.loads(json.dumps(payload, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(
            f"{what} cannot be kept exactly in a tombstone (not JSON: {exc}); not retired"
        ) from exc
    if copy != payload:
        raise ConfigurationError(
            f"{what} cannot be kept exactly in a tombstone (JSON changes it, e.g. tuples "
            "or non-string keys); not retired"
        )
    return dict(copy)


class StoreAdapter(ABC):
    """Reads, removes and puts back one memory of a store, by id."""

    label: str = "store"
    """Names the store in the audit trail (e.g. ``langchain:InMemoryVectorStore``)."""

    @abstractmethod
    def fetch(self, memory_id: str) -> StoredMemory | None:
        """The memory with this id, or None when the store has none."""

    @abstractmethod
    def remove(self, memory_id: str) -> None:
        """Take the memory out of the store (a retriever over it no longer returns it)."""

    @abstractmethod
    def put_back(self, payload: dict[str, Any]) -> None:
        """Put an encoded memory (:attr:`StoredMemory.payload`) back under its id."""

    async def afetch(self, memory_id: str) -> StoredMemory | None:
        """Async :meth:`fetch` (default: in a worker thread)."""
        return await asyncio.to_thread(self.fetch, memory_id)

    async def aremove(self, memory_id: str) -> None:
        """Async :meth:`remove` (default: in a worker thread)."""
        await asyncio.to_thread(self.remove, memory_id)

    async def aput_back(self, payload: dict[str, Any]) -> None:
        """Async :meth:`put_back` (default: in a worker thread)."""
        await asyncio.to_thread(self.put_back, payload)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.label!r})"
