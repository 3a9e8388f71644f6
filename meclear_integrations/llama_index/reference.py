"""Giving the reference answer of one query to a postprocessor inside a query engine.

A query engine passes only the query to its postprocessors, so the gold answer travels in
a context variable: ``with query_reference("December 2023"): engine.query(...)`` (or
``await engine.aquery(...)`` inside the block). Context variables follow the call into
worker threads the postprocessor starts and into asyncio tasks, and are restored when
the block exits. A reference set this way wins over the postprocessor's ``reference``
field; without either, the default judge is reference-free.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..core.errors import ConfigurationTypeError

__all__ = ["current_reference", "query_reference"]

_REFERENCE: ContextVar[str | None] = ContextVar("meclear_reference", default=None)


@contextmanager
def query_reference(reference: str) -> Iterator[None]:
    """Within the block, postprocessors judge against ``reference``.

    Args:
        reference: The gold answer of the queries in the block.

    Yields:
        Nothing; the reference is set for the block.

    Raises:
        ConfigurationTypeError: ``reference`` is not text.

    Example:
        >>> from meclear_integrations.llama_index import current_reference, query_reference
        >>> with query_reference("December 2023"):
        ...     current_reference()
        'December 2023'
    """
    if not isinstance(reference, str):
        raise ConfigurationTypeError(f"a reference must be text, got {type(reference).__name__}")
    token = _REFERENCE.set(reference)
    try:
        yield
    finally:
        _REFERENCE.reset(token)


def current_reference() -> str | None:
    """The reference set by the innermost :func:`query_reference` block, if any.

    Returns:
        The reference, or None outside any block.
    """
    return _REFERENCE.get()
