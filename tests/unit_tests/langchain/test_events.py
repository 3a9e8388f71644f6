"""Custom events reach callback handlers (sync and async) with the right parent run, and
the whole clearance is one run tree."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler

from meclear_integrations import ClearanceConfig
from meclear_integrations.langchain import ClearingRetriever, reference_config
from meclear_integrations.langchain.clearing_step import CLEARANCE_RUN_NAME, EVALUATE_RUN_NAME
from meclear_integrations.runtime.payloads import PROGRESS_EVENT_NAME
from meclear_integrations.telemetry import TraceSettings
from tests.support.progress import check_progress

EXPECTED_STAGES = [
    ("meclear.screening", "start"),
    ("meclear.screening", "end"),
    ("meclear.attribution", "start"),
    ("meclear.attribution", "end"),
    ("meclear.clearance", "start"),
    ("meclear.clearance", "end"),
]


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any], UUID]] = []
        self.chain_starts: dict[UUID, tuple[str | None, UUID | None]] = {}

    def on_custom_event(self, name, data, *, run_id, **kwargs) -> None:
        self.events.append((name, data, run_id))

    def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, **kwargs):
        self.chain_starts[run_id] = (kwargs.get("name"), parent_run_id)

    def on_retriever_start(self, serialized, query, *, run_id, parent_run_id=None, **kwargs):
        self.chain_starts[run_id] = ("retriever", parent_run_id)


class AsyncEvents(AsyncCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any], UUID]] = []
        self.chain_starts: dict[UUID, tuple[str | None, UUID | None]] = {}

    async def on_custom_event(self, name, data, *, run_id, **kwargs) -> None:
        self.events.append((name, data, run_id))

    async def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, **kw):
        self.chain_starts[run_id] = (kw.get("name"), parent_run_id)

    async def on_retriever_start(self, serialized, query, *, run_id, parent_run_id=None, **kw):
        self.chain_starts[run_id] = ("retriever", parent_run_id)


def _stages(events):  # type: ignore[no-untyped-def]
    """The stage boundaries alone (progress events have a name of their own)."""
    return [e for e in events if e[0] != PROGRESS_EVENT_NAME]


def _check(handler, top_level_retriever: bool = True) -> None:
    assert [(n, d["phase"]) for n, d, _ in _stages(handler.events)] == EXPECTED_STAGES
    assert check_progress([(d["stage"], d["phase"], d) for _, d, _ in handler.events])
    run_ids = {run_id for _, _, run_id in handler.events}
    assert len(run_ids) == 1
    (clearance_run,) = run_ids
    name, parent = handler.chain_starts[clearance_run]
    assert name == CLEARANCE_RUN_NAME
    assert handler.chain_starts[parent][0] == "retriever"
    payloads = {(n, d["phase"]): d for n, d, _ in _stages(handler.events)}
    attribution = payloads[("meclear.attribution", "end")]
    assert attribution["shapley"]["f1"]["value"] < 0 and attribution["shapley"]["g1"]["value"] > 0
    end = payloads[("meclear.clearance", "end")]
    assert end["cleared_ids"] == ["f1", "f2"] and end["recovered"] is True
    assert end["query_id"] == str(clearance_run)
    assert end["cost"]["coalitions"] > 0
    assert payloads[("meclear.clearance", "start")]["candidates"]
    assert "loo" in payloads[("meclear.screening", "end")]


def test_sync_events_and_parent(case, inner, llm) -> None:
    handler = Events()
    retriever = ClearingRetriever(retriever=inner, llm=llm)
    retriever.invoke(case.query, config=reference_config(case.reference, {"callbacks": [handler]}))
    _check(handler)


async def test_async_events_and_parent(case, inner, llm) -> None:
    handler = AsyncEvents()
    retriever = ClearingRetriever(retriever=inner, llm=llm)
    await retriever.ainvoke(
        case.query, config=reference_config(case.reference, {"callbacks": [handler]})
    )
    _check(handler)


async def test_events_in_astream_events(case, inner, llm) -> None:
    retriever = ClearingRetriever(retriever=inner, llm=llm)
    names = [
        e["name"]
        async for e in retriever.astream_events(
            case.query, config=reference_config(case.reference), version="v2"
        )
        if e["event"] == "on_custom_event"
    ]
    assert [n for n in names if n != PROGRESS_EVENT_NAME] == [n for n, _ in EXPECTED_STAGES]
    assert PROGRESS_EVENT_NAME in names


def test_interaction_events_when_enabled(case, inner, llm) -> None:
    handler = Events()
    retriever = ClearingRetriever(
        retriever=inner, llm=llm, clearance=ClearanceConfig(interactions=True)
    )
    retriever.invoke(case.query, config=reference_config(case.reference, {"callbacks": [handler]}))
    names = [n for n, _, _ in handler.events]
    assert "meclear.interactions" in names


def test_error_path_closes_the_stage(case, inner, llm) -> None:
    from langchain_core.runnables import RunnableLambda

    handler = Events()
    retriever = ClearingRetriever(
        retriever=inner,
        llm=llm,
        judge=RunnableLambda(lambda p: "??"),
        on_failure="open",
        clearance=ClearanceConfig(failure={"retry": {"initial_backoff": 0.0, "jitter": 0.0}}),
    )
    retriever.invoke(case.query, config=reference_config(case.reference, {"callbacks": [handler]}))
    phases = [(n, d["phase"]) for n, d, _ in _stages(handler.events)]
    assert phases == [("meclear.screening", "start"), ("meclear.screening", "error")]
    assert handler.events[-1][1]["error_type"] == "EvaluatorError"
    assert {d["stage"] for n, d, _ in handler.events if n == PROGRESS_EVENT_NAME} == {"screening"}


def test_empty_retrieval_event(case, llm) -> None:
    from langchain_core.runnables import RunnableLambda

    handler = Events()
    retriever = ClearingRetriever(retriever=RunnableLambda(lambda q: []), llm=llm)
    retriever.invoke(case.query, config={"callbacks": [handler]})
    assert [(n, d.get("skipped")) for n, d, _ in handler.events] == [("meclear.clearance", "empty")]


def _walk(run, depth=0, out=None):
    out = [] if out is None else out
    out.append((depth, run))
    for child in run.child_runs:
        _walk(child, depth + 1, out)
    return out


def _assert_one_judge_call_per_distinct_answer(evaluations) -> None:  # type: ignore[no-untyped-def]
    """Every evaluation runs the agent (the simulated model is not temperature 0); the judge
    model runs once per distinct answer, under the evaluation that first produced it."""
    judged: list[str] = []
    for evaluation in evaluations:
        llm_runs = [r for _, r in _walk(evaluation) if r.run_type == "llm"]
        assert len(llm_runs) in (1, 2)  # the agent's call, and the judge's when not cached
        if len(llm_runs) == 2:
            judged.append(evaluation.outputs["answer"])
    answers = {e.outputs["answer"] for e in evaluations}
    assert sorted(judged) == sorted(answers)  # each distinct answer judged exactly once


def test_run_tree(case, inner, llm) -> None:
    collector = RunCollectorCallbackHandler()
    retriever = ClearingRetriever(
        retriever=inner, llm=llm, name="clearing", tracing=TraceSettings(detail="evaluations")
    )
    retriever.invoke(
        case.query, config=reference_config(case.reference, {"callbacks": [collector]})
    )
    (root,) = collector.traced_runs
    assert root.run_type == "retriever" and root.name == "clearing"
    children = {c.name: c for c in root.child_runs}
    assert set(children) == {"RunnableLambda", CLEARANCE_RUN_NAME}
    clearance = children[CLEARANCE_RUN_NAME]
    assert clearance.outputs["cleared_ids"] == ["f1", "f2"]
    assert clearance.outputs["contributions"]["f1"]["harmful"] is True
    assert clearance.inputs["memory_ids"] == ["g1", "b1", "f1", "b2", "f2", "b3"]
    evaluations = [c for c in clearance.child_runs if c.name == EVALUATE_RUN_NAME]
    assert len(evaluations) == clearance.outputs["cost"]["evaluator_calls"]
    _assert_one_judge_call_per_distinct_answer(evaluations)
    for evaluation in evaluations:
        assert {"answer", "score", "parsed_by"} <= set(evaluation.outputs)
    # No memory text in the clearance run's outputs (bounded, ids and numbers only).
    assert all(m.content not in str(clearance.outputs) for m in case.memories)


async def test_run_tree_async(case, inner, llm) -> None:
    collector = RunCollectorCallbackHandler()
    retriever = ClearingRetriever(
        retriever=inner, llm=llm, tracing=TraceSettings(detail="evaluations")
    )
    await retriever.ainvoke(
        case.query, config=reference_config(case.reference, {"callbacks": [collector]})
    )
    (root,) = collector.traced_runs
    clearance = next(c for c in root.child_runs if c.name == CLEARANCE_RUN_NAME)
    evaluations = [c for c in clearance.child_runs if c.name == EVALUATE_RUN_NAME]
    assert evaluations
    _assert_one_judge_call_per_distinct_answer(evaluations)
