"""Giving the reference answer for one query through the invoke config's metadata.

A chain that contains a :class:`ClearingRetriever` (or the compressor) passes the gold
answer of this query as ``config={"metadata": {"meclear_reference": "..."}}``; LangChain
propagates config metadata to every child run, so the retriever finds it on its run
manager. :func:`reference_config` builds (or extends) such a config. Without a reference
the default judge is reference-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig

from ..core.errors import ConfigurationTypeError
from ..pipeline.settings import DEFAULT_REFERENCE_KEY

__all__ = ["REFERENCE_METADATA_KEY", "reference_config", "reference_from_metadata"]

REFERENCE_METADATA_KEY = DEFAULT_REFERENCE_KEY
"""Config-metadata key holding the reference answer of the query."""


def reference_config(
    reference: str, config: RunnableConfig | None = None, *, key: str = REFERENCE_METADATA_KEY
) -> RunnableConfig:
    """A copy of ``config`` whose metadata carries ``reference`` under ``key``.

    Args:
        reference: The query's gold answer.
        config: The config to extend (not modified).
        key: The metadata key (the component's ``documents.reference_key``).

    Returns:
        The new config.

    Example:
        >>> from meclear_integrations.langchain import reference_config
        >>> reference_config("December 2023")
        {'metadata': {'meclear_reference': 'December 2023'}}
    """
    out: dict[str, Any] = dict(config or {})
    out["metadata"] = {**(out.get("metadata") or {}), key: reference}
    return out  # type: ignore[return-value]


def reference_from_metadata(
    metadata: Mapping[str, Any] | None, key: str = REFERENCE_METADATA_KEY
) -> str | None:
    """The reference answer in ``metadata``.

    Args:
        metadata: The run's config metadata.
        key: The metadata key.

    Returns:
        The reference, or None when absent.

    Raises:
        ConfigurationTypeError: The value is not text.
    """
    value = (metadata or {}).get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        kind = type(value).__name__
        raise ConfigurationTypeError(f"metadata[{key!r}] must be a string, got {kind}")
    return value
