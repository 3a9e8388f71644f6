"""The LlamaIndex extra is required by this subpackage; say which one when it is missing."""

from __future__ import annotations

__all__ = ["EXTRA_HINT", "require_llama_index"]

EXTRA_HINT = "pip install 'meclear-integrations[llama-index]'"


def require_llama_index() -> None:
    """Raise an ImportError naming the extra when llama-index-core is not installed."""
    try:
        import llama_index.core  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
        raise ImportError(
            f"meclear_integrations.llama_index needs llama-index-core: {EXTRA_HINT}"
        ) from exc
