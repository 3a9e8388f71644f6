"""A chat model that cannot answer: the default detects it, the retriever says so and clears
nothing (``stops.cannot_answer``, issue 29 item 6)."""

from __future__ import annotations

from langchain_core.language_models import FakeListChatModel

from meclear_integrations import ClearanceConfig
from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from tests.unit_tests.langchain.test_events import AsyncEvents, Events, _stages


def silent() -> FakeListChatModel:
    return FakeListChatModel(responses=["I don't know."])


def retrieve(case, inner, handler, **settings):
    retriever = ClearingRetriever(
        retriever=inner, llm=silent(), judge=SimulatedChatModel.from_case(case), **settings
    )
    config = reference_config(case.reference, {"callbacks": [handler]})
    return retriever.invoke(case.query, config=config)


def check(docs, case, handler) -> None:
    assert [d.id for d in docs] == [m.id for m in case.memories]  # nothing cleared
    meta = docs[0].metadata["meclear"]
    assert meta["status"] == "skipped" and meta["status_reason"] == "model_cannot_answer"
    assert not any(d.metadata["meclear"]["cleared"] for d in docs)
    stages = [(n, d["phase"]) for n, d, _ in _stages(handler.events)]
    assert stages == [
        ("meclear.screening", "start"),
        ("meclear.screening", "end"),
        ("meclear.clearance", "start"),
        ("meclear.clearance", "end"),
    ]
    screening_end = _stages(handler.events)[1][1]
    assert screening_end["stopped"] == "model_cannot_answer"
    assert _stages(handler.events)[-1][1]["cleared_ids"] == []


def test_default_reports_a_model_that_cannot_answer(case, inner) -> None:
    handler = Events()
    docs = retrieve(case, inner, handler)
    check(docs, case, handler)
    calls = docs[0].metadata["meclear"]["model_calls"]["total"]
    paid = retrieve(
        case,
        inner,
        Events(),
        clearance=ClearanceConfig(stops={"cannot_answer": False, "unexplained": False}),
    )
    assert paid[0].metadata["meclear"].get("status_reason") != "model_cannot_answer"
    # at K = 6 the screening batch already holds every coalition: no saving, no extra call,
    # but a clear status instead of a run that finds nothing (the saving: core tests)
    assert calls <= paid[0].metadata["meclear"]["model_calls"]["total"]


async def test_async_reports_a_model_that_cannot_answer(case, inner) -> None:
    handler = AsyncEvents()
    retriever = ClearingRetriever(
        retriever=inner, llm=silent(), judge=SimulatedChatModel.from_case(case)
    )
    config = reference_config(case.reference, {"callbacks": [handler]})
    docs = await retriever.ainvoke(case.query, config=config)
    check(docs, case, handler)
