"""The provider and tracing variables a hermetic test must not see."""

from __future__ import annotations

import pytest

PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "MECLEAR_LLM",
    "LANGSMITH_TRACING",
    "LANGCHAIN_TRACING_V2",
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
    "LANGSMITH_ENDPOINT",
    "LANGCHAIN_ENDPOINT",
)


def clear_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset every provider key and tracing endpoint for the test."""
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
