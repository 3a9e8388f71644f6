"""The LangChain extra is required by this subpackage; say which one when it is missing."""

from __future__ import annotations

__all__ = ["require_langchain"]

EXTRA_HINT = "pip install 'meclear-integrations[langchain]'"


def require_langchain() -> None:
    """Raise an ImportError naming the extra when langchain-core is not installed."""
    try:
        import langchain_core  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
        raise ImportError(
            f"meclear_integrations.langchain needs langchain-core: {EXTRA_HINT}"
        ) from exc
