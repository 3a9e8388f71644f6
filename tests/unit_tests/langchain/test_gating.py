"""ClearingRetriever with triggers and the harm ledger."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.simulation import redundant_harm_example
from meclear_integrations.triggers import Sampling, TokenBudget, WhenJudgeFails

CASE = redundant_harm_example()
DOCS = [Document(page_content=m.content, id=m.id, metadata={"src": "s"}) for m in CASE.memories]


class Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.llm_calls = 0
        self.events: list[tuple[str, Any]] = []
        self.chain_ids: list[str] = []

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.llm_calls += 1

    def on_llm_start(self, *args: Any, **kwargs: Any) -> None:
        self.llm_calls += 1

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.events.append((name, data))

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id, **kwargs: Any) -> None:
        if kwargs.get("name") == "meclear_clearance":
            self.chain_ids.append(str(run_id))


def retriever(**kwargs: Any) -> ClearingRetriever:
    return ClearingRetriever(
        retriever=RunnableLambda(lambda q: DOCS), llm=SimulatedChatModel.from_case(CASE), **kwargs
    )


def invoke(r: ClearingRetriever, query: str = CASE.query, recorder: Recorder | None = None):
    config = reference_config(CASE.reference)
    config["callbacks"] = [recorder] if recorder else []
    return r.invoke(query, config=config)


@pytest.fixture
def ledger(tmp_path):
    with HarmLedger(tmp_path / "l.db") as led:
        yield led


def test_a_declined_query_returns_the_documents_unchanged_without_a_model_call(ledger) -> None:
    recorder = Recorder()
    docs = invoke(retriever(loop={"trigger": Sampling(0.0), "ledger": ledger}), recorder=recorder)
    assert recorder.llm_calls == 0
    assert [d.page_content for d in docs] == [d.page_content for d in DOCS]
    assert [d.id for d in docs] == [d.id for d in DOCS] and docs[0] is not DOCS[0]
    meta = docs[0].metadata["meclear"]
    assert meta["status"] == "skipped" and meta["status_reason"].endswith("not_sampled")
    assert meta["cleared"] is False and docs[0].metadata["src"] == "s"
    assert any(
        name == "meclear.clearance" and data.get("skipped") == "trigger"
        for name, data in recorder.events
    )
    run = ledger.find_run(ledger.query_id(CASE.query))
    assert run.mode == "skipped" and run.trace_run_id == recorder.chain_ids[0]


def test_repeat_queries_are_ledger_guided_and_recorded(ledger) -> None:
    r = retriever(loop={"trigger": WhenJudgeFails(), "ledger": ledger})
    cold_recorder, warm_recorder = Recorder(), Recorder()
    first = invoke(r, recorder=cold_recorder)
    second = invoke(r, "In which month was John in Italy?", recorder=warm_recorder)
    assert [d.id for d in first] == [d.id for d in second] == ["g1", "b1", "b2", "b3"]
    assert second[0].metadata["meclear"]["ledger_guided"] is True
    assert warm_recorder.llm_calls < cold_recorder.llm_calls / 3
    runs = ledger.runs()
    assert [r.mode for r in runs] == ["ledger_guided", "full"]
    assert runs[0].success_signal == "reference" and runs[0].agent_model == "SimulatedChatModel"
    assert second[0].metadata["meclear"]["ledger_run_id"] == runs[0].run_id
    assert sorted(ledger.prior_harmful(CASE.memories)) == ["f1", "f2"]


def test_token_budget_drops_least_contributing_documents() -> None:
    docs = invoke(retriever(loop={"trigger": TokenBudget(40)}))
    kept = [d.id for d in docs]
    assert "f1" not in kept and "f2" not in kept and "g1" in kept
    budget = docs[0].metadata["meclear"]["token_budget"]
    assert budget["reason"] == "token_budget" and budget["tokens_after"] <= 40
    assert set(budget["dropped_ids"]).isdisjoint({"g1"})


def test_async_path(ledger) -> None:
    r = retriever(loop={"trigger": WhenJudgeFails(), "ledger": ledger})
    config = reference_config(CASE.reference)

    async def main():
        first = await r.ainvoke(CASE.query, config=config)
        second = await r.ainvoke("Remind me: " + CASE.query, config=config)
        declined = await retriever(loop={"trigger": Sampling(0.0), "ledger": ledger}).ainvoke(
            "other", config=config
        )
        return first, second, declined

    _, second, declined = asyncio.run(main())
    assert [d.id for d in second] == ["g1", "b1", "b2", "b3"]
    assert second[0].metadata["meclear"]["ledger_guided"] is True
    assert declined[0].metadata["meclear"]["status"] == "skipped" and len(declined) == 6
    assert [r.mode for r in ledger.runs()] == ["skipped", "ledger_guided", "full"]
