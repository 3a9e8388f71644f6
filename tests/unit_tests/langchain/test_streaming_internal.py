"""A UI streaming ``on_chat_model_stream`` from ``astream_events`` sees the user-facing
model only: the clearance's internal model runs (agent and judge) are not streamed to it
(192 chunks of agent answers and judge verdicts before, with no tag to filter them), they
carry the tag ``meclear:internal`` for every other handler, and the clearance's own custom
events still arrive."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from meclear_integrations.langchain import (
    INTERNAL_TAG,
    ClearingRetriever,
    SimulatedChatModel,
    reference_config,
)
from meclear_integrations.telemetry import TraceSettings


class Tags(BaseCallbackHandler):
    """Records the tags of every chat model run."""

    def __init__(self) -> None:
        self.runs: list[list[str]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.runs.append(list(kwargs.get("tags") or []))


def _chain(case, documents, detail: str = "failures"):  # type: ignore[no-untyped-def]
    llm = SimulatedChatModel.from_case(case)  # streams word by word, like a provider
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: list(documents)),
        llm=llm,
        tracing=TraceSettings(detail=detail),
    )
    prompt = ChatPromptTemplate.from_template("Memories: {context}\n\nQuestion: {question}")
    context = retriever | (lambda docs: "\n".join(d.page_content for d in docs))
    return {"context": context, "question": RunnablePassthrough()} | prompt | llm


@pytest.mark.parametrize("detail", ["evaluations", "failures"])
async def test_only_the_user_facing_model_streams(case, documents, detail: str) -> None:
    chain = _chain(case, documents, detail)
    tags = Tags()
    config = reference_config(case.reference, {"callbacks": [tags]})
    chunks: list[str] = []
    custom: list[str] = []
    async for event in chain.astream_events(case.query, config=config, version="v2"):
        if event["event"] == "on_chat_model_stream" and event["data"]["chunk"].content:
            chunks.append(event["data"]["chunk"].content)
            assert INTERNAL_TAG not in event["tags"]
        if event["event"] == "on_custom_event":
            custom.append(event["name"])
        assert INTERNAL_TAG not in event.get("tags", [])
    assert chunks == ["December ", "2023"]
    assert "meclear.clearance" in custom and "meclear.progress" in custom
    internal = [t for t in tags.runs if INTERNAL_TAG in t]
    assert len(internal) >= 52 and len(tags.runs) == len(internal) + 1  # + the answer


async def test_exclude_tags_filters_them_too(case, documents) -> None:
    chain = _chain(case, documents)
    config = reference_config(case.reference)
    names = set()
    async for event in chain.astream_events(
        case.query, config=config, version="v2", exclude_tags=[INTERNAL_TAG]
    ):
        names.add(event["name"])
    assert "meclear_evaluate" not in names and "meclear_agent" not in names


def test_sync_stream_of_the_chain(case, documents) -> None:
    chain = _chain(case, documents)
    text = "".join(m.content for m in chain.stream(case.query, reference_config(case.reference)))
    assert text == "December 2023"


def test_documents_unchanged(case, documents: list[Document]) -> None:
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: list(documents)),
        llm=SimulatedChatModel.from_case(case),
    )
    out = retriever.invoke(case.query, config=reference_config(case.reference))
    assert [d.id for d in out] == ["g1", "b1", "b2", "b3"]
