"""``ClearingRetriever``'s sync and async retrievals run one flow (``_retrieving``): the same
inner retriever call (its ``invoke`` on one path, its native ``ainvoke`` on the other), top
k, model prompts (each path on its own model method), kept documents, events and errors.
SIMULATED agent and judge."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

from meclear_integrations.langchain import ClearingRetriever, reference_config
from tests.support.recording_models import RecordingChat, canonical_prompts, plain


class Inner(BaseRetriever):
    """A retriever logging each call (path, query, k) and returning the frozen context."""

    documents: list[Document]
    calls: list[tuple[str, str, Any]] = Field(default_factory=list)
    fail: bool = False

    def _found(self, path: str, query: str, k: Any) -> list[Document]:
        self.calls.append((path, query, k))
        if self.fail:
            raise ConnectionError("vector store down")
        return [d.model_copy(deep=True) for d in self.documents]

    def _get_relevant_documents(self, query, *, run_manager, k=None):
        return self._found("sync", query, k)

    async def _aget_relevant_documents(self, query, *, run_manager, k=None):
        return self._found("async", query, k)


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.events.append((name, data.get("stage", ""), data.get("phase", "")))


def _run(mode: str, retriever: ClearingRetriever, query: str, config: Any, **kw: Any) -> Any:
    if mode == "async":
        return asyncio.run(retriever.ainvoke(query, config=config, **kw))
    return retriever.invoke(query, config=config, **kw)


@pytest.mark.parametrize("k", [None, 5])
def test_both_paths_take_the_same_steps(case, documents, k) -> None:
    runs = {}
    for mode in ("sync", "async"):
        inner, llm, events = Inner(documents=documents), RecordingChat.from_case(case), Events()
        retriever = ClearingRetriever(retriever=inner, llm=llm, k=k)
        config = {**reference_config(case.reference), "callbacks": [events]}
        kept = _run(mode, retriever, case.query, config)
        runs[mode] = (kept, inner.calls, llm, sorted(events.events))
    (s_kept, s_inner, s_llm, s_events), (a_kept, a_inner, a_llm, a_events) = (
        runs["sync"],
        runs["async"],
    )
    assert s_inner == [("sync", case.query, k)] and a_inner == [("async", case.query, k)]
    assert s_llm.paths == {"sync"} and a_llm.paths == {"async"}
    assert canonical_prompts(s_llm.prompts) == canonical_prompts(a_llm.prompts)
    assert [plain(d) for d in s_kept] == [plain(d) for d in a_kept]
    expected = ["g1", "b1", "b2", "b3"] if k is None else ["g1", "b1", "b2"]
    assert [d.id for d in s_kept] == expected
    assert ("meclear.clearance", "clearance", "end") in s_events
    assert s_events == a_events


def test_both_paths_raise_the_inner_retrievers_error(case, documents) -> None:
    raised = {}
    for mode in ("sync", "async"):
        inner, llm = Inner(documents=documents, fail=True), RecordingChat.from_case(case)
        retriever = ClearingRetriever(retriever=inner, llm=llm)
        with pytest.raises(ConnectionError) as info:
            _run(mode, retriever, case.query, reference_config(case.reference))
        raised[mode] = (str(info.value), [q for _, q, _ in inner.calls], llm.prompts)
    assert raised["sync"] == raised["async"] == ("vector store down", [case.query], [])
