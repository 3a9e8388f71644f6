"""A call cap that cannot pay for clearance is enforced before spending it: the least a
clearing run needs is a true lower bound, and the components decline such queries up
front (``status="skipped"``, reason ``budget``), LangChain and LlamaIndex, sync and async."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest

from meclear_integrations.core import ClearanceConfig, MeClearEngine
from meclear_integrations.core.errors import BudgetExceededError
from meclear_integrations.core.failures.alerts import FailOpenWarning
from meclear_integrations.guard.live_bounds import budget_shortfall, minimum_evaluator_calls
from meclear_integrations.simulation import redundant_harm_example

CONFIGS = {
    "default": ClearanceConfig(),
    "paper": ClearanceConfig.paper(),
    "cheap": ClearanceConfig.cheap(),
    "exact": ClearanceConfig(estimator="exact"),
    "permutation": ClearanceConfig(estimator="permutation"),
    "hierarchical": ClearanceConfig(estimator="hierarchical"),
    "no_early_exit": ClearanceConfig(early_exit=False, trials=3),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_clearing_run_makes_at_least_the_minimum(name: str) -> None:
    case = redundant_harm_example()
    config = CONFIGS[name]
    report = MeClearEngine(config).clear(case.memories, case.evaluator())
    assert report.cleared  # the run cleared something ...
    needed = minimum_evaluator_calls(config, len(case.memories))
    assert 0 < needed <= report.cost.evaluator_calls  # ... and paid at least the minimum


def test_shortfall_only_under_a_cap_that_cannot_pay() -> None:
    k = len(redundant_harm_example().memories)
    needed = minimum_evaluator_calls(ClearanceConfig(), k)
    assert budget_shortfall(ClearanceConfig(), k) is None
    assert budget_shortfall(ClearanceConfig(budget={"max_evaluator_calls": needed}), k) is None
    assert (
        budget_shortfall(ClearanceConfig(budget={"max_evaluator_calls": needed - 1}), k) == needed
    )
    assert minimum_evaluator_calls(ClearanceConfig(), 0) == 0


def _components(case: Any, calls: list[str], **kwargs: Any) -> dict[str, Any]:
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda
    from llama_index.core.schema import NodeWithScore, TextNode

    from meclear_integrations.langchain import (
        ClearingRetriever,
        SimulatedChatModel,
        reference_config,
    )
    from meclear_integrations.llama_index import MeClearPostprocessor, SimulatedLLM

    class Events(BaseCallbackHandler):
        def on_chat_model_start(self, *args: Any, **kw: Any) -> None:
            calls.append("model")

        def on_custom_event(self, name: str, data: Any, **kw: Any) -> None:
            if data.get("skipped"):
                calls.append(f"skipped:{data['skipped']}:{data['budget']['min_evaluator_calls']}")

    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: list(docs)),
        llm=SimulatedChatModel.from_case(case),
        **kwargs,
    )
    nodes = [NodeWithScore(node=TextNode(id_=m.id, text=m.content)) for m in case.memories]
    llm = SimulatedLLM.from_case(case)
    original = llm.complete

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append("model")
        return original(*args, **kw)

    object.__setattr__(llm, "complete", counted)
    postprocessor = MeClearPostprocessor(llm=llm, **kwargs)
    config = {**reference_config(case.reference), "callbacks": [Events()]}

    async def langchain(asynchronous: bool) -> list[dict[str, Any]]:
        if asynchronous:
            out = await retriever.ainvoke(case.query, config=config)
        else:
            out = retriever.invoke(case.query, config=config)
        return [d.metadata["meclear"] for d in out]

    async def llama_index(asynchronous: bool) -> list[dict[str, Any]]:
        from meclear_integrations.llama_index import query_reference

        with query_reference(case.reference):
            if asynchronous:
                out = await postprocessor.apostprocess_nodes(nodes, query_str=case.query)
            else:
                out = postprocessor.postprocess_nodes(nodes, query_str=case.query)
        return [n.node.metadata["meclear"] for n in out]

    return {"langchain": langchain, "llama_index": llama_index}


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
async def test_a_cap_that_cannot_pay_declines_before_any_model_call(
    framework: str, asynchronous: bool
) -> None:
    case = redundant_harm_example()
    needed = minimum_evaluator_calls(ClearanceConfig(), len(case.memories))
    calls: list[str] = []
    run = _components(case, calls, clearance={"budget": {"max_evaluator_calls": 20}})[framework]
    with pytest.warns(FailOpenWarning, match="budget"):
        meta = await run(asynchronous)
    assert "model" not in calls
    assert [m["status"] for m in meta] == ["skipped"] * len(case.memories)
    assert {m["status_reason"] for m in meta} == {"budget"}
    assert not any(m["cleared"] for m in meta)
    if framework == "langchain":
        assert calls == [f"skipped:budget:{needed}"]


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
def test_a_cap_that_can_pay_runs(framework: str) -> None:
    case = redundant_harm_example()
    calls: list[str] = []
    run = _components(case, calls, clearance={"budget": {"max_evaluator_calls": 400}})[framework]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FailOpenWarning)
        meta = asyncio.run(run(False))
    assert "model" in calls and meta[0]["status"] == "complete"
    assert {m["memory_id"] for m in meta} == {m.id for m in case.memories} - set(case.targets)


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
def test_failing_closed_raises_the_budget_error(framework: str) -> None:
    case = redundant_harm_example()
    calls: list[str] = []
    run = _components(
        case,
        calls,
        clearance={"budget": {"max_evaluator_calls": 20}},
        on_failure="closed",
    )
    with pytest.raises(BudgetExceededError, match="max_evaluator_calls=20"):
        asyncio.run(run[framework](False))
    assert "model" not in calls
