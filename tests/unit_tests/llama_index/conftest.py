"""Shared fixtures: the redundant-harm case as nodes and as an index, the simulated LLM,
collectors of instrumentation events and spans on the root dispatcher."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler
from llama_index.core.schema import NodeWithScore, TextNode
from pydantic import Field

from meclear_integrations.llama_index import HashEmbedding, MeClearStageEvent, SimulatedLLM
from meclear_integrations.simulation import SimulatedCase, redundant_harm_example
from tests.support.env import clear_provider_env


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No provider credentials; global Settings restored after each test."""
    clear_provider_env(monkeypatch)
    llm, embed = Settings._llm, Settings._embed_model
    yield
    Settings._llm, Settings._embed_model = llm, embed


@pytest.fixture
def case() -> SimulatedCase:
    return redundant_harm_example()


def case_nodes(case: SimulatedCase) -> list[TextNode]:
    """One node per memory; node id = memory id; only the session number as metadata."""
    return [
        TextNode(id_=m.id, text=m.content, metadata={"session": m.metadata["session"]})
        for m in case.memories
    ]


@pytest.fixture
def nodes(case: SimulatedCase) -> list[NodeWithScore]:
    """The frozen context in retrieval order, with descending scores."""
    return [NodeWithScore(node=n, score=1.0 - i / 10) for i, n in enumerate(case_nodes(case))]


@pytest.fixture
def llm(case: SimulatedCase) -> SimulatedLLM:
    return SimulatedLLM.from_case(case)


@pytest.fixture
def index(case: SimulatedCase) -> VectorStoreIndex:
    return VectorStoreIndex(case_nodes(case), embed_model=HashEmbedding())


class EventCollector(BaseEventHandler):
    """Collects MeClear events of the ``kinds`` (a fresh list per instance)."""

    kinds: ClassVar[tuple[type, ...]] = (MeClearStageEvent,)
    events: list[Any] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "EventCollector"

    def handle(self, event, **kwargs) -> None:
        if isinstance(event, self.kinds):
            self.events.append(event)


@pytest.fixture
def events() -> Iterator[EventCollector]:
    root = get_dispatcher()
    handler = EventCollector()
    root.add_event_handler(handler)
    yield handler
    root.event_handlers.remove(handler)


@pytest.fixture
def spans() -> Iterator[SimpleSpanHandler]:
    root = get_dispatcher()
    handler = SimpleSpanHandler()
    root.add_span_handler(handler)
    yield handler
    root.span_handlers.remove(handler)
