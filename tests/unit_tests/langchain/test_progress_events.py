"""Progress events of a faulty K=12 query: ``meclear.progress`` custom events, sync and
async, under the clearance run, in astream_events."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from meclear_integrations.runtime.payloads import PROGRESS_EVENT_NAME
from tests.support.progress import check_progress, has_progress_inside, wide_case

Seen = list[tuple[str, dict[str, Any], UUID]]


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: Seen = []

    def on_custom_event(self, name, data, *, run_id, **kwargs) -> None:
        self.events.append((name, data, run_id))


class AsyncEvents(AsyncCallbackHandler):
    def __init__(self) -> None:
        self.events: Seen = []

    async def on_custom_event(self, name, data, *, run_id, **kwargs) -> None:
        self.events.append((name, data, run_id))


@pytest.fixture
def wide():  # type: ignore[no-untyped-def]
    return wide_case(6)


@pytest.fixture
def retriever(wide) -> ClearingRetriever:  # type: ignore[no-untyped-def]
    documents = [Document(page_content=m.content, id=m.id) for m in wide.memories]
    inner = RunnableLambda(lambda query: [d.model_copy(deep=True) for d in documents])
    return ClearingRetriever(retriever=inner, llm=SimulatedChatModel.from_case(wide))


def _check(events: Seen) -> None:
    assert len({run_id for _, _, run_id in events}) == 1  # all under the clearance run
    for name, data, _ in events:
        assert (name == PROGRESS_EVENT_NAME) == (data["phase"] == "progress")
    by_batch = check_progress([(d["stage"], d["phase"], d) for _, d, _ in events])
    attribution = {
        d["batch"] for n, d, _ in events if n == PROGRESS_EVENT_NAME and d["stage"] == "attribution"
    }
    assert attribution and has_progress_inside(by_batch, attribution)
    model_calls = [d["model_calls_done"] for n, d, _ in events if n == PROGRESS_EVENT_NAME]
    assert model_calls == sorted(model_calls) and model_calls[-1] > 0
    end = next(d for n, d, _ in events if n == "meclear.clearance" and d["phase"] == "end")
    assert end["cleared_ids"] == ["f1", "f2"]
    assert end["cost"]["evaluator_calls"] == by_batch[max(by_batch)][-1]["run_calls_done"]


def test_sync_progress(wide, retriever) -> None:  # type: ignore[no-untyped-def]
    handler = Events()
    retriever.invoke(wide.query, config=reference_config(wide.reference, {"callbacks": [handler]}))
    _check(handler.events)


async def test_async_progress(wide, retriever) -> None:  # type: ignore[no-untyped-def]
    handler = AsyncEvents()
    await retriever.ainvoke(
        wide.query, config=reference_config(wide.reference, {"callbacks": [handler]})
    )
    _check(handler.events)


async def test_progress_in_astream_events(wide, retriever) -> None:  # type: ignore[no-untyped-def]
    events: Seen = []
    async for e in retriever.astream_events(
        wide.query, config=reference_config(wide.reference), version="v2"
    ):
        if e["event"] == "on_custom_event":
            events.append((e["name"], e["data"], UUID(e["run_id"])))
    _check(events)
