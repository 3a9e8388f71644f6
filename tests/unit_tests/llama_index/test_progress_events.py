"""Progress events of a faulty K=12 query reach root dispatcher handlers (sync and async),
inside the postprocessor's span, between the start and end of their stage."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.schema import NodeWithScore, TextNode

from meclear_integrations.llama_index import (
    MeClearPostprocessor,
    MeClearProgressEvent,
    MeClearStageEvent,
    MeClearStageStartEvent,
    SimulatedLLM,
)
from tests.support.progress import check_progress, has_progress_inside, wide_case
from tests.unit_tests.llama_index.conftest import EventCollector


class Collector(EventCollector):
    """Stage and progress events of MeClear, in order."""

    kinds: ClassVar[tuple[type, ...]] = (MeClearStageEvent, MeClearProgressEvent)

    @classmethod
    def class_name(cls) -> str:
        return "ProgressCollector"


@pytest.fixture
def collector() -> Iterator[Collector]:
    root = get_dispatcher()
    handler = Collector()
    root.add_event_handler(handler)
    yield handler
    root.event_handlers.remove(handler)


@pytest.fixture
def wide():  # type: ignore[no-untyped-def]
    return wide_case(6)


@pytest.fixture
def postprocessor(wide) -> MeClearPostprocessor:  # type: ignore[no-untyped-def]
    return MeClearPostprocessor(llm=SimulatedLLM.from_case(wide), reference=wide.reference)


def _nodes(case) -> list[NodeWithScore]:  # type: ignore[no-untyped-def]
    return [
        NodeWithScore(node=TextNode(id_=m.id, text=m.content), score=1.0 - i / 20)
        for i, m in enumerate(case.memories)
    ]


def _phase(event: Any) -> str:
    if isinstance(event, MeClearProgressEvent):
        return "progress"
    return "start" if isinstance(event, MeClearStageStartEvent) else event.payload["phase"]


def _check(events: list[Any]) -> None:
    assert len({e.span_id for e in events}) == 1  # the postprocessor's span
    assert events[0].span_id.startswith("MeClearPostprocessor.")
    assert len({e.query_id for e in events}) == 1
    progress = [e for e in events if isinstance(e, MeClearProgressEvent)]
    for event in progress:  # typed fields are the shared payload
        assert event.payload["phase"] == "progress" and event.payload["stage"] == event.stage
        assert (event.batch, event.calls_done, event.calls_total, event.run_calls_done) == (
            event.payload["batch"],
            event.payload["calls_done"],
            event.payload["calls_total"],
            event.payload["run_calls_done"],
        )
        assert event.class_name() == "MeClearProgressEvent"
    by_batch = check_progress([(e.stage, _phase(e), e.payload) for e in events])
    attribution = {e.batch for e in progress if e.stage == "attribution"}
    assert attribution and has_progress_inside(by_batch, attribution)
    assert sorted(events[-1].payload["cleared_ids"]) == ["f1", "f2"]


def test_sync_progress_events(wide, postprocessor, collector) -> None:  # type: ignore[no-untyped-def]
    postprocessor.postprocess_nodes(_nodes(wide), query_str=wide.query)
    _check(collector.events)


async def test_async_progress_events(wide, postprocessor, collector) -> None:  # type: ignore[no-untyped-def]
    await postprocessor.apostprocess_nodes(_nodes(wide), query_str=wide.query)
    _check(collector.events)


def test_progress_events_serialise(wide, postprocessor, collector) -> None:  # type: ignore[no-untyped-def]
    postprocessor.postprocess_nodes(_nodes(wide), query_str=wide.query)
    event = next(e for e in collector.events if isinstance(e, MeClearProgressEvent))
    dumped = event.model_dump(mode="json")
    assert dumped["class_name"] == "MeClearProgressEvent"
    assert all(m.content not in str(dumped) for m in wide.memories)  # ids and numbers only
