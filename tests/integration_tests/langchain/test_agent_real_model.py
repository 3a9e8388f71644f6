"""MeClearMiddleware with a REAL local model as the clearance's task agent (a llama.cpp or
any OpenAI-compatible server on this machine), inside a real create_agent loop.

Runs when ``MECLEAR_REAL_MODEL_BASE_URL`` (e.g. ``http://127.0.0.1:PORT/v1``) and
``MECLEAR_REAL_MODEL`` (the served model's name) are set and the server answers; skipped with
a one-line reason otherwise. The agent's own tool-calling model is the SIMULATED one (a small
local model does not call tools reliably); the judge is the token-F1 reference judge (a 135M
model's verdict lines are unreadable, docs NOTES). What is asserted is the plumbing: the
real model answers every coalition (no fail-open), every returned document carries its
result, and the tool result is a subsequence of what the tool returned.
"""

from __future__ import annotations

import os
import urllib.request

import pytest
from langchain.agents import create_agent
from langchain_core.tools import tool

from meclear_integrations import ClearanceConfig
from meclear_integrations.judges import TokenF1Judge
from meclear_integrations.langchain import MeClearMiddleware, SimulatedChatModel, reference_config

BASE_URL = os.environ.get("MECLEAR_REAL_MODEL_BASE_URL")
MODEL = os.environ.get("MECLEAR_REAL_MODEL")


def _server_answers() -> str | None:
    if not (BASE_URL and MODEL):
        return "no local model: set MECLEAR_REAL_MODEL_BASE_URL and MECLEAR_REAL_MODEL"
    try:
        with urllib.request.urlopen(f"{BASE_URL}/models", timeout=30):
            return None
    except OSError as exc:
        return f"the local model server at {BASE_URL} does not answer: {exc}"


@pytest.mark.slow
def test_middleware_with_a_real_local_model(case, documents) -> None:
    reason = _server_answers()
    if reason is not None:
        pytest.skip(reason)
    pytest.importorskip("langchain_openai")
    from langchain_openai import ChatOpenAI

    shown = [d for d in documents if d.id in ("g1", "f1", "b1")]

    @tool(response_format="content_and_artifact")
    def search_memories(query: str):
        """Search the user's memories."""
        return "\n\n".join(d.page_content for d in shown), shown

    real = ChatOpenAI(
        model=MODEL, base_url=BASE_URL, api_key="local", temperature=0, max_tokens=64, timeout=60
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
