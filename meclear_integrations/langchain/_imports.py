"""The LangChain extra is required by this subpackage; say which one when it is missing."""

from __future__ import annotations

__all__ = ["require_langchain", "require_langchain_agents"]

EXTRA_HINT = "pip install 'meclear-integrations[langchain]'"


def require_langchain() -> None:
    """Raise an ImportError naming the extra when langchain-core is not installed."""
    try:
        import langchain_core  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
        raise ImportError(
            f"meclear_integrations.langchain needs langchain-core: {EXTRA_HINT}"
        ) from exc


AGENTS_EXTRA_HINT = "pip install 'meclear-integrations[langchain-agents]'"


def require_langchain_agents() -> None:
    """Raise a one-line ImportError naming the extra when ``langchain>=1`` is not installed."""
    try:
        import langchain.agents.middleware  # noqa: F401
    except ImportError:
        raise ImportError(
            f"MeClearMiddleware needs langchain>=1 (create_agent): {AGENTS_EXTRA_HINT}"
        ) from None
