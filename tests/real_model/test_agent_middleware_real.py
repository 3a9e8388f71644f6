"""MeClearMiddleware with the REAL local model as the clearance's task agent, inside a real
``create_agent`` loop (the ``real_model`` tier: ``tools/local_model.sh`` serves the model).

The agent's own tool-calling model is the SIMULATED one (a small local model does not call
tools reliably); the judge is the token-F1 reference judge. What is asserted is the plumbing:
the real model answers every coalition (no fail-open), every returned document carries its
result, and the tool result is a subsequence of what the tool returned.
"""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.tools import tool

from meclear_integrations import ClearanceConfig
from meclear_integrations.judges import TokenF1Judge
from meclear_integrations.langchain import MeClearMiddleware, SimulatedChatModel, reference_config
from tests.unit_tests.langchain.conftest import case, documents  # noqa: F401 (fixtures)

from .conftest import RealModel

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(900)]


def test_middleware_with_a_real_local_model(real_model: RealModel, case, documents) -> None:  # noqa: F811
    from langchain_openai import ChatOpenAI

    shown = [d for d in documents if d.id in ("g1", "f1", "b1")]

    @tool(response_format="content_and_artifact")
    def search_memories(query: str):
        """Search the user's memories."""
        return "\n\n".join(d.page_content for d in shown), shown

    real = ChatOpenAI(
        model=real_model.name,
        base_url=real_model.base_url,
        api_key="local",
        temperature=0,
        max_tokens=64,
        timeout=60,
    )
    middleware = MeClearMiddleware(
        llm=real,
        judge=TokenF1Judge(),
        clearance=ClearanceConfig.cheap(budget={"max_wall_seconds": 240}),
        on_failure="closed",  # a model that cannot answer fails the test, not open
    )
    agent = create_agent(
        SimulatedChatModel.from_case(case), tools=[search_memories], middleware=[middleware]
    )
    out = agent.invoke(
        {"messages": [("user", case.query)]}, config=reference_config(case.reference)
    )
    kept = out["messages"][2].artifact
    order = [d.id for d in shown]
    assert [d.id for d in kept] == [i for i in order if i in {d.id for d in kept}]
    assert all(d.metadata["meclear"]["status"] in {"complete", "unverified"} for d in kept)
    assert out["messages"][-1].text  # the agent answered
