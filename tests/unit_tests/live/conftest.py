"""Hermetic environment for the live-use tests: no provider keys, no tracing endpoints,
global LlamaIndex settings restored."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "LANGSMITH_TRACING",
    "LANGCHAIN_TRACING_V2",
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
    "LANGSMITH_ENDPOINT",
    "LANGCHAIN_ENDPOINT",
)


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    from llama_index.core import Settings

    llm, embed = Settings._llm, Settings._embed_model
    yield
    Settings._llm, Settings._embed_model = llm, embed
