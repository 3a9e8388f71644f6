"""Hermetic environment for the live-use tests: no provider keys, no tracing endpoints,
global LlamaIndex settings restored."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.env import clear_provider_env


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    clear_provider_env(monkeypatch)
    from llama_index.core import Settings

    llm, embed = Settings._llm, Settings._embed_model
    yield
    Settings._llm, Settings._embed_model = llm, embed
