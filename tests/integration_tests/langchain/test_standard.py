"""langchain-tests' standard retriever suite against ClearingRetriever."""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests

from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel
from meclear_integrations.simulation import redundant_harm_example


def _params() -> dict[str, Any]:
    case = redundant_harm_example()
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_texts([m.content for m in case.memories], ids=[m.id for m in case.memories])
    return {
        "retriever": store.as_retriever(search_kwargs={"k": 6}),
        "llm": SimulatedChatModel.from_case(case),
    }


class TestClearingRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[ClearingRetriever]:
        return ClearingRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return _params()

    @property
    def retriever_query_example(self) -> str:
        return "What does John like to do when he travels?"
