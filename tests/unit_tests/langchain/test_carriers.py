"""clearance_scope on the LangChain ClearingRetriever: carriers reported and withheld."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from meclear_integrations import ClearanceConfig
from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from meclear_integrations.simulation.examples import heavy_redundancy_example


@pytest.fixture
def parts():
    case = heavy_redundancy_example()
    documents = [Document(page_content=m.content, id=m.id) for m in case.memories]
    inner = RunnableLambda(lambda q: [d.model_copy(deep=True) for d in documents])
    return case, inner, SimulatedChatModel.from_case(case)


def test_complete_withholds_every_copy(parts) -> None:
    case, inner, llm = parts
    retriever = ClearingRetriever(retriever=inner, llm=llm, clearance_scope="complete")
    assert retriever.clearance.clearance_scope == "complete"
    out = retriever.invoke(case.query, config=reference_config(case.reference))
    assert [d.id for d in out] == ["g1", "b1", "b2"]
    meta = out[0].metadata["meclear"]
    assert meta["carrier"] is False and meta["withheld"] is False and meta["recovered"]


async def test_minimal_reports_carriers_and_keeps_them(parts) -> None:
    case, inner, llm = parts
    retriever = ClearingRetriever(
        retriever=inner, llm=llm, clearance=ClearanceConfig(find_carriers=True)
    )
    out = await retriever.ainvoke(case.query, config=reference_config(case.reference))
    assert [d.id for d in out] == ["g1", "b1", "b2", "f3", "f4"]
    carriers = {d.id for d in out if d.metadata["meclear"]["carrier"]}
    assert carriers == {"f3", "f4"}


def test_default_is_minimal_carriers_reported_not_withheld(parts) -> None:
    # the default's unexplained-failure probe asks each memory alone, so the carriers
    # search reuses those answers and reports the carriers; "minimal" withholds none of them
    case, inner, llm = parts
    retriever = ClearingRetriever(retriever=inner, llm=llm)
    assert retriever.clearance.clearance_scope == "minimal"
    out = retriever.invoke(case.query, config=reference_config(case.reference))
    assert [d.id for d in out] == ["g1", "b1", "b2", "f3", "f4"]
    assert not any(d.metadata["meclear"].get("withheld") for d in out)


def test_passthrough_keeps_the_rest_of_the_configuration(parts) -> None:
    _, inner, llm = parts
    retriever = ClearingRetriever(
        retriever=inner, llm=llm, clearance=ClearanceConfig(trials=3), clearance_scope="complete"
    )
    assert retriever.clearance.trials == 3 and retriever.clearance.clearance_scope == "complete"
    with pytest.raises(ValueError):
        ClearingRetriever(retriever=inner, llm=llm, clearance_scope="everything")
