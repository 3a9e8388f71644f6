"""Which adapter a store gets: :func:`adapter_for`, by the store's class, no import needed.

The adapters import their framework only when one is built: a LangChain ``VectorStore``
(``.vectorstore``), a LangGraph ``BaseStore`` (``.graph_store``), a LlamaIndex index
(``.index``).
"""

from __future__ import annotations

from typing import Any

from ..core.errors import ConfigurationError
from .base import StoreAdapter

__all__ = ["adapter_for"]


def _bases(store: Any) -> set[str]:
    return {f"{c.__module__}.{c.__qualname__}" for c in type(store).__mro__}


def adapter_for(store: Any, **options: Any) -> StoreAdapter:
    """The :class:`~.base.StoreAdapter` of ``store`` (an adapter is returned as it is).

    Args:
        store: A LangChain ``VectorStore``, a LangGraph ``BaseStore`` (give ``namespace``),
            a LlamaIndex ``VectorStoreIndex``, or an adapter.
        **options: The adapter's options (e.g. ``namespace=("memories", "u1")`` for a
            LangGraph store).

    Returns:
        The adapter.

    Raises:
        ConfigurationError: No adapter knows this kind of store, or options were given
            with an adapter.
    """
    if isinstance(store, StoreAdapter):
        if options:
            raise ConfigurationError(f"options {sorted(options)} given with an adapter")
        return store
    bases = _bases(store)
    if "langchain_core.vectorstores.base.VectorStore" in bases:
        from .vectorstore import VectorStoreAdapter

        return VectorStoreAdapter(store, **options)
    if "langgraph.store.base.BaseStore" in bases:
        from .graph_store import GraphStoreAdapter

        return GraphStoreAdapter(store, **options)
    if "llama_index.core.indices.base.BaseIndex" in bases:
        from .index import IndexAdapter

        return IndexAdapter(store, **options)
    raise ConfigurationError(
        f"no write-back adapter for {type(store).__name__}: pass a LangChain VectorStore, a "
        "LangGraph BaseStore, a LlamaIndex VectorStoreIndex, or a StoreAdapter of your own"
    )
