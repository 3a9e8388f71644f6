"""ClearingRetriever under faults: fail-open by default, fail-closed on request, nothing
lost (store and inputs byte-identical on every path), concurrent queries kept apart."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from meclear_integrations import ClearanceConfig, EvaluatorError
from meclear_integrations.core import BudgetExceededError
from meclear_integrations.core.failures.kind import PermanentFailureError
from meclear_integrations.judges import ExactMatchJudge
from meclear_integrations.langchain import (
    ClearingRetriever,
    MeClearCompressor,
    SimulatedChatModel,
    reference_config,
)
from meclear_integrations.simulation import redundant_harm_example
from tests.support.chat import ScriptedChat
from tests.support.faults import HTTPError

KEPT = ["g1", "b1", "b2", "b3"]
FAST = ClearanceConfig(failure={"retry": {"initial_backoff": 0.0, "jitter": 0.0}})


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def on_custom_event(self, name, data, *, run_id, **kwargs):  # type: ignore[no-untyped-def]
        self.events.append((name, data))


class AsyncEvents(AsyncCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    async def on_custom_event(self, name, data, *, run_id, **kwargs):  # type: ignore[no-untyped-def]
        self.events.append((name, data))


@pytest.fixture
def case():  # type: ignore[no-untyped-def]
    return redundant_harm_example()


@pytest.fixture
def store(case) -> InMemoryVectorStore:  # type: ignore[no-untyped-def]
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    store.add_documents(
        [
            Document(page_content=m.content, metadata={"n": i}, id=m.id)
            for i, m in enumerate(case.memories)
        ]
    )
    return store


class Watched:
    """The store's retriever, remembering every document it handed out (and its bytes)."""

    def __init__(self, store: InMemoryVectorStore) -> None:
        self.store = store
        self.before = json.dumps(store.store, sort_keys=True, default=str)
        self.retriever = store.as_retriever(search_kwargs={"k": 6})
        self.handed: list[tuple[Document, str]] = []
        from langchain_core.runnables import RunnableLambda

        def sync(query: str) -> list[Document]:
            docs = self.retriever.invoke(query)
            self.handed.extend((d, d.model_dump_json()) for d in docs)
            return docs

        async def asyn(query: str) -> list[Document]:
            docs = await self.retriever.ainvoke(query)
            self.handed.extend((d, d.model_dump_json()) for d in docs)
            return docs

        self.runnable = RunnableLambda(sync, afunc=asyn)

    def assert_untouched(self) -> None:
        assert json.dumps(self.store.store, sort_keys=True, default=str) == self.before
        assert self.handed and all(d.model_dump_json() == snap for d, snap in self.handed)


def _model(case, **kwargs) -> ScriptedChat:  # type: ignore[no-untyped-def]
    return ScriptedChat(inner=SimulatedChatModel.from_case(case), **kwargs)


PATHS = {
    "transient-recovered": (
        {"faults": {1: HTTPError(429, {"retry-after-ms": "1"}), 4: TimeoutError()}},
        {},
    ),
    "garbage-completions": ({"every": "%%% garbage %%%"}, {}),
    "provider-down": ({"every": HTTPError(503)}, {}),
    "call-budget": ({}, {"budget": {"max_evaluator_calls": 3}}),
    "too-many-documents": ({}, {"budget": {"max_memories": 4}}),
}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("asynchronous", [False, True])
async def test_every_path_serves_the_context_and_changes_nothing(
    case, store, path: str, asynchronous: bool
) -> None:  # type: ignore[no-untyped-def]
    model_kwargs, config = PATHS[path]
    watched = Watched(store)
    retriever = ClearingRetriever(
        retriever=watched.runnable,
        llm=_model(case, **model_kwargs),
        clearance=FAST.updated(**config),
    )
    handler = AsyncEvents() if asynchronous else Events()
    cfg = reference_config(case.reference, {"callbacks": [handler]})
    if asynchronous:
        out = await retriever.ainvoke(case.query, config=cfg)
    else:
        out = await asyncio.to_thread(retriever.invoke, case.query, config=cfg)
    watched.assert_untouched()
    retrieved = [d.id for d, _ in watched.handed]
    if path == "transient-recovered":
        assert sorted(d.id for d in out) == sorted(KEPT)
        assert all(d.metadata["meclear"]["status"] == "complete" for d in out)
        return
    assert [d.id for d in out] == retrieved  # the full context, retrieval order
    assert [d.page_content for d in out] == [d.page_content for d, _ in watched.handed]
    declined = path == "call-budget"  # a cap that cannot pay is enforced before spending
    for d in out:
        meta = d.metadata["meclear"]
        assert meta["cleared"] is False
        if declined:
            assert meta["status"] == "skipped" and meta["status_reason"] == "budget"
        else:
            assert meta["status"] == "failed"
            assert meta["failure"]["reason"] in {"evaluator_error", "too_many_memories"}
        assert "sk-proj" not in json.dumps(d.metadata)
    if declined:
        assert [data["skipped"] for _, data in handler.events] == ["budget"]
    else:
        errors = [data for name, data in handler.events if data.get("phase") == "error"]
        assert errors and errors[-1]["outcome"] == "fail_open"
    assert "sk-proj" not in json.dumps(handler.events)


@pytest.mark.parametrize("on_failure", ["open", "closed"])
@pytest.mark.parametrize("asynchronous", [False, True])
async def test_an_auth_error_raises_at_once_whatever_on_failure_says(
    case, store, on_failure: str, asynchronous: bool
) -> None:  # type: ignore[no-untyped-def]
    watched = Watched(store)
    model = _model(case, every=HTTPError(401, msg="invalid api key sk-proj-abcdefghijklmnopqrstu"))
    retriever = ClearingRetriever(
        retriever=watched.runnable, llm=model, clearance=FAST, on_failure=on_failure
    )
    with pytest.raises(PermanentFailureError, match="HTTP 401") as info:
        if asynchronous:
            await retriever.ainvoke(case.query, config=reference_config(case.reference))
        else:
            retriever.invoke(case.query, config=reference_config(case.reference))
    assert "api_key" in str(info.value) and "sk-proj" not in str(info.value)
    assert info.value.role == "agent" and info.value.kind_detail == "auth"
    watched.assert_untouched()


@pytest.mark.parametrize(
    ("model_kwargs", "config", "error"),
    [
        ({"every": HTTPError(503)}, {}, EvaluatorError),
        ({}, {"budget": {"max_evaluator_calls": 3}}, BudgetExceededError),
    ],
)
def test_fail_closed_raises_and_changes_nothing(case, store, model_kwargs, config, error) -> None:  # type: ignore[no-untyped-def]
    watched = Watched(store)
    retriever = ClearingRetriever(
        retriever=watched.runnable,
        llm=_model(case, **model_kwargs),
        clearance=FAST.updated(**config),
        on_failure="closed",
    )
    with pytest.raises(error):
        retriever.invoke(case.query, config=reference_config(case.reference))
    watched.assert_untouched()


def test_compressor_fails_open_too(case) -> None:  # type: ignore[no-untyped-def]
    docs = [Document(page_content=m.content, id=m.id, metadata={"k": [1]}) for m in case.memories]
    snapshot = [d.model_dump_json() for d in docs]
    compressor = MeClearCompressor(llm=_model(case, every=HTTPError(500)), clearance=FAST)
    out = compressor.compress_documents(docs, case.query, callbacks=None)
    assert [d.id for d in out] == [d.id for d in docs] and all(
        o is not d for o, d in zip(out, docs, strict=True)
    )
    assert [d.model_dump_json() for d in docs] == snapshot


QUERIES = 8
"""Concurrent queries on one instance: four of each reference, all in flight at once."""


async def test_one_instance_many_concurrent_queries_stay_apart(case) -> None:  # type: ignore[no-untyped-def]
    """Half the queries carry the gold reference (both faults cleared); half carry the
    faults' answer as reference (the full context already gives it: early exit, nothing
    cleared). Every query gets its own outcome; each query's events carry only its run id."""
    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    from langchain_core.runnables import RunnableLambda

    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: [d.model_copy() for d in docs]),
        llm=SimulatedChatModel.from_case(case),
        judge=ExactMatchJudge(),
        clearance=ClearanceConfig(estimator="exact"),
    )
    handlers = [AsyncEvents() for _ in range(QUERIES)]
    references = [case.reference if i % 2 == 0 else "January 2023" for i in range(QUERIES)]
    outs = await asyncio.gather(
        *(
            retriever.ainvoke(case.query, config=reference_config(r, {"callbacks": [h]}))
            for r, h in zip(references, handlers, strict=True)
        )
    )
    for out, reference, handler in zip(outs, references, handlers, strict=True):
        ids = [d.id for d in out]
        if reference == case.reference:
            assert ids == KEPT
        else:
            assert ids == [d.id for d in docs]
            assert all(d.metadata["meclear"]["early_exit"] for d in out)
        query_ids = {data["query_id"] for _, data in handler.events}
        assert len(query_ids) == 1  # this query's events only
        stages = [(n, d["phase"]) for n, d in handler.events]
        assert stages[0] == ("meclear.screening", "start") and stages[-1] == (
            "meclear.clearance",
            "end",
        )
    all_ids = [next(iter({d["query_id"] for _, d in h.events})) for h in handlers]
    assert len(set(all_ids)) == QUERIES
