"""LangChain on the real model: ``ClearingRetriever`` in an LCEL RAG chain, ``ChatOpenAI``
as the task agent and the judge (against the reference), sync and async."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from .memories import MEMORIES, QUESTION, REFERENCE, clearance

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(900)]


def _retriever(llm: Any) -> Any:
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda

    from meclear_integrations.langchain import ClearingRetriever

    docs = [Document(page_content=t, id=i, metadata={"date": d}) for i, t, d in MEMORIES]
    return ClearingRetriever(
        retriever=RunnableLambda(lambda q: docs), llm=llm, clearance=clearance()
    )


class _Events:
    def __init__(self) -> None:
        from langchain_core.callbacks import BaseCallbackHandler

        events: list[tuple[str, dict[str, Any]]] = []

        class Handler(BaseCallbackHandler):
            def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
                events.append((name, dict(data)))

        self.events = events
        self.handler = Handler()


def _check_kept(kept: list[Any]) -> dict[str, Any]:
    """The flow completed without failing open; each document carries its contributions."""
    assert kept, "clearance returned no document"
    metas = [d.metadata["meclear"] for d in kept]
    for meta in metas:
        assert meta.get("status") != "failed", f"clearance failed open: {meta.get('failure')}"
    if not metas[0]["early_exit"] and metas[0].get("status") != "unverified":
        assert all(m["shapley"] is not None and m["loo_effect"] is not None for m in metas)
    for meta in metas:  # an abstention says why
        assert meta.get("status") != "unverified" or meta.get("status_reason"), meta
    return metas[0]


def test_clearing_retriever_in_an_lcel_chain(chat_openai) -> None:
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough

    from meclear_integrations.langchain import reference_config

    retriever = _retriever(chat_openai)
    seen: list[Any] = []

    def context(kept: list[Any]) -> str:
        seen.extend(kept)
        return "\n".join(d.page_content for d in kept)

    prompt = ChatPromptTemplate.from_template(
        "Memories:\n{context}\n\nQuestion: {question}\nAnswer in a few words."
    )
    chain = (
        {"context": retriever | context, "question": RunnablePassthrough()}
        | prompt
        | chat_openai
        | StrOutputParser()
    )
    events = _Events()
    config = reference_config(REFERENCE)
    config["callbacks"] = [events.handler]
    answer = chain.invoke(QUESTION, config=config)
    assert isinstance(answer, str) and answer.strip()
    _check_kept(seen)
    names = [n for n, _ in events.events]
    assert "meclear.screening" in names and "meclear.clearance" in names
    end = [d for n, d in events.events if n == "meclear.clearance" and d.get("phase") == "end"]
    assert end and end[-1].get("outcome") != "fail_open"
    errors = [d for n, d in events.events if d.get("phase") == "error"]
    assert not errors, errors


def test_clearing_retriever_async(chat_openai) -> None:
    from meclear_integrations.langchain import reference_config

    retriever = _retriever(chat_openai)
    kept = asyncio.run(retriever.ainvoke(QUESTION, config=reference_config(REFERENCE)))
    _check_kept(kept)


def test_real_agent_with_the_exact_judge_reports_contributions(chat_openai) -> None:
    """The real model answers, exact match judges: the attribution runs on real answers."""
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda

    from meclear_integrations.judges import ExactMatchJudge
    from meclear_integrations.langchain import ClearingRetriever, reference_config

    docs = [Document(page_content=t, id=i, metadata={"date": d}) for i, t, d in MEMORIES]
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: docs),
        llm=chat_openai,
        judge=ExactMatchJudge(mode="contains"),
        clearance=clearance(),
    )
    kept = retriever.invoke(QUESTION, config=reference_config(REFERENCE))
    meta = _check_kept(kept)
    assert meta["model_calls"]["agent"] >= 1 and meta["model_calls"]["judge"] >= 1
