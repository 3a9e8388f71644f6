"""The cheap preset through ``ClearingRetriever`` (what a user pays, SIMULATED world as the
chat model, deterministic agent): a faulty query clears the same memories for fewer model
calls than the default; a clean query costs the same one agent and one judge call."""

from __future__ import annotations

import warnings

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from meclear_integrations import ClearanceConfig
from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from meclear_integrations.simulation import redundant_harm_example


def _query(config: ClearanceConfig, reference: str) -> tuple[list[str], dict[str, int]]:
    case = redundant_harm_example()
    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: list(docs)),
        llm=SimulatedChatModel.from_case(case),
        clearance=config,
        deterministic_agent=True,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kept = retriever.invoke(case.query, config=reference_config(reference))
    calls = kept[0].metadata["meclear"]["model_calls"]
    return [d.id or "" for d in kept], {k: calls[k] for k in ("agent", "judge", "total")}


def test_faulty_query_costs_fewer_model_calls() -> None:
    reference = redundant_harm_example().reference
    kept_default, default = _query(ClearanceConfig(), reference)
    kept_cheap, cheap = _query(ClearanceConfig.cheap(), reference)
    assert kept_cheap == kept_default == ["g1", "b1", "b2", "b3"]
    assert cheap["total"] == cheap["agent"] + cheap["judge"]
    assert cheap["agent"] < default["agent"]
    assert cheap["total"] < default["total"]


@pytest.mark.parametrize("config", [ClearanceConfig(), ClearanceConfig.cheap()])
def test_clean_query_costs_one_agent_and_one_judge_call(config: ClearanceConfig) -> None:
    kept, calls = _query(config, "January 2023")  # the full context's own answer
    assert len(kept) == 6
    assert (calls["agent"], calls["judge"]) == (1, 1)
