"""Which memory metadata the agent and the judge see (dates and source, fenced as data).

In real stores, time is the main signal that a fact is stale, and the source says who
stated it. The integrations render the metadata keys listed here, when a memory has them,
as attributes of its ``<memory>`` block (``answer_prompts.render_memory``: values are data,
fenced like the text), in the agent's prompt and the reference-free judge's prompt.

:data:`DEFAULT_METADATA_KEYS` picks up the common time and source keys (LangChain loaders,
LlamaIndex readers, mem0 / Zep style stores); pass
``documents=Documents(metadata_keys=(...))`` to a component to choose your own, or ``()`` to
render none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..core.memory import Memory

__all__ = ["DEFAULT_METADATA_KEYS", "SOURCE_KEYS", "TIME_KEYS", "present_keys"]

TIME_KEYS: tuple[str, ...] = (
    "date",
    "datetime",
    "timestamp",
    "time",
    "session_date",
    "created_at",
    "updated_at",
    "valid_at",
    "invalid_at",
    "creation_date",
    "last_modified_date",
)
"""Time keys rendered by default."""
SOURCE_KEYS: tuple[str, ...] = ("source", "speaker", "author", "file_name")
"""Source keys rendered by default."""
DEFAULT_METADATA_KEYS: tuple[str, ...] = TIME_KEYS + SOURCE_KEYS
"""What the components render when ``metadata_keys`` is not set."""


def present_keys(keys: Sequence[str] | None, memories: Iterable[Memory]) -> tuple[str, ...]:
    """The keys that at least one of ``memories`` carries, in the order of ``keys``.

    Args:
        keys: The candidate keys (None: :data:`DEFAULT_METADATA_KEYS`).
        memories: The retrieved memories.

    Returns:
        The keys present.
    """
    wanted = DEFAULT_METADATA_KEYS if keys is None else tuple(keys)
    seen = {k for m in memories for k in m.metadata}
    return tuple(k for k in wanted if k in seen)
