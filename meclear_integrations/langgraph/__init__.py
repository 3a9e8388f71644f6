"""LangGraph integration: ``ClearingStore``, a clearing wrapper of any LangGraph ``BaseStore``.

Needs the ``langgraph`` extra (``pip install 'meclear-integrations[langgraph]'``; LangGraph's
``PostgresStore``: the ``langgraph-postgres`` extra).
"""

try:
    import langgraph.store.base  # noqa: F401
except ImportError:
    raise ImportError(
        "meclear_integrations.langgraph needs langgraph: "
        "pip install 'meclear-integrations[langgraph]'"
    ) from None

from .store import ClearingStore

__all__ = ["ClearingStore"]
