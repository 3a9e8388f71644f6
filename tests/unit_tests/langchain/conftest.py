"""Shared fixtures: the redundant-harm case as documents, the simulated chat model."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from meclear_integrations.langchain import SimulatedChatModel
from meclear_integrations.simulation import SimulatedCase, redundant_harm_example
from tests.support.env import clear_provider_env


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_provider_env(monkeypatch)


@pytest.fixture
def case() -> SimulatedCase:
    return redundant_harm_example()


@pytest.fixture
def documents(case: SimulatedCase) -> list[Document]:
    return [
        Document(page_content=m.content, metadata=dict(m.metadata), id=m.id) for m in case.memories
    ]


@pytest.fixture
def inner(documents: list[Document]) -> RunnableLambda:
    """A runnable retriever returning the frozen context (fresh copies, retrieval order)."""
    return RunnableLambda(lambda query: [d.model_copy(deep=True) for d in documents])


@pytest.fixture
def llm(case: SimulatedCase) -> SimulatedChatModel:
    return SimulatedChatModel.from_case(case)
