"""Memories and the frozen retrieved context M (Eq. 1, 6).

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 1, 6.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator
from pydantic_core import to_jsonable_python

from .errors import ConfigurationError, DuplicateMemoryError
from .text import utf8_safe

__all__ = ["Memory", "freeze_context", "json_safe"]


class Memory(BaseModel):
    """One retrieved memory record m_i = (x_i, xi_i): its text and auxiliary data."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    """Stable identity of the record; coalitions are cached by it."""
    content: str = Field(strict=True)
    """The memory text x_i shown to the task agent (text only: bytes or other objects are
    rejected, never coerced)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Auxiliary information xi_i (timestamp, source, provenance...). Any values are
    accepted; in JSON (``model_dump_json``, reports) a value JSON cannot hold is written as
    its ``str()`` (:func:`json_safe`), so a report serialises whatever metadata it carries."""

    @field_validator("id", "content", mode="before")
    @classmethod
    def _utf8_safe(cls, value: object) -> object:
        """Keep lone surrogates in memory texts as backslash escapes.

        A lone surrogate (text no UTF-8 channel, provider, database or trace can carry)
        is kept as its backslash escape, so hostile text serialises at every exit.
        """
        return utf8_safe(value) if isinstance(value, str) else value

    @field_serializer("metadata", when_used="json")
    def _json_metadata(self, metadata: dict[str, Any]) -> dict[str, Any]:
        return json_safe(metadata)

    def __hash__(self) -> int:  # metadata dicts are unhashable; identity is the id
        return hash(self.id)


def _text_of(value: object) -> str:
    try:
        return str(value)
    except Exception:  # a value whose str() fails
        return f"<{type(value).__name__}>"


def json_safe(metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` as JSON-ready values.

    ``metadata`` as JSON-ready values: what pydantic can serialise (dates, decimals,
    sets...) as pydantic does, anything else (arbitrary objects, cycles, extreme nesting)
    as its ``str()``; never raises.

    Args:
        metadata: a memory's metadata.

    Returns:
        A JSON-serialisable copy.
    """
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        try:
            safe = to_jsonable_python(value, fallback=_text_of)
        except Exception:  # a cycle or a nesting pydantic refuses
            safe = _text_of(value)
        out[utf8_safe(str(key))] = _utf8_safe_tree(safe)
    return out


def _utf8_safe_tree(value: Any) -> Any:
    """JSON-ready ``value`` with every string (keys included) made UTF-8 safe."""
    if isinstance(value, str):
        return utf8_safe(value)
    if isinstance(value, dict):
        return {utf8_safe(str(k)): _utf8_safe_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_utf8_safe_tree(v) for v in value]
    return value


def freeze_context(memories: Iterable[Memory]) -> tuple[Memory, ...]:
    """Freeze a retrieved context in retrieval order (Eq. 6); duplicate ids are an error.

    Args:
        memories: the retrieved memories, in retrieval order.

    Returns:
        The frozen context M (Eq. 6).

    Raises:
        ConfigurationError: a single memory, or an item that is not a :class:`Memory`.
        DuplicateMemoryError: two memories share an id.
    """
    if isinstance(memories, Memory):
        raise ConfigurationError("expected a sequence of Memory objects, got a single Memory")
    frozen = tuple(memories)
    for position, memory in enumerate(frozen):
        if not isinstance(memory, Memory):
            raise ConfigurationError(
                f"context item {position} is {type(memory).__name__}, expected Memory"
            )
    duplicates = [mid for mid, n in Counter(m.id for m in frozen).items() if n > 1]
    if duplicates:
        raise DuplicateMemoryError(
            f"duplicate memory ids in the retrieved context: {sorted(duplicates)}; "
            "every memory needs a distinct id"
        )
    return frozen


def memory_ids(memories: Sequence[Memory]) -> tuple[str, ...]:
    """The ids of ``memories`` in order.

    Args:
        memories: memories in retrieval order.

    Returns:
        Their ids.
    """
    return tuple(m.id for m in memories)
