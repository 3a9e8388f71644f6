"""MeClearCompressor inside ContextualCompressionRetriever."""

from __future__ import annotations

from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from meclear_integrations.langchain import MeClearCompressor, reference_config


class Fixed(BaseRetriever):
    docs: list[Document]

    def _get_relevant_documents(self, query, *, run_manager):
        return [d.model_copy(deep=True) for d in self.docs]


class Names(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[str] = []

    def on_custom_event(self, name, data, *, run_id, **kwargs) -> None:
        self.events.append(name)


def test_compression_retriever_sync(case, documents, llm) -> None:
    handler = Names()
    retriever = ContextualCompressionRetriever(
        base_compressor=MeClearCompressor(llm=llm), base_retriever=Fixed(docs=documents)
    )
    out = retriever.invoke(
        case.query, config=reference_config(case.reference, {"callbacks": [handler]})
    )
    assert [d.id for d in out] == ["g1", "b1", "b2", "b3"]
    assert out[0].metadata["meclear"]["cleared"] is False
    assert handler.events[-1] == "meclear.clearance"


async def test_compression_retriever_async(case, documents, llm) -> None:
    retriever = ContextualCompressionRetriever(
        base_compressor=MeClearCompressor(llm=llm), base_retriever=Fixed(docs=documents)
    )
    out = await retriever.ainvoke(case.query, config=reference_config(case.reference))
    assert [d.id for d in out] == ["g1", "b1", "b2", "b3"]


def test_compressor_on_its_own(case, documents, llm) -> None:
    out = MeClearCompressor(llm=llm, judge=lambda answer: answer == "December 2023")
    kept = out.compress_documents(documents, case.query)
    assert [d.id for d in kept] == ["g1", "b1", "b2", "b3"]
