"""An agent with MeClearMiddleware, traced to LangSmith (a recorder on 127.0.0.1) by the
environment alone: the trace holds the clearance run, its decision and the cleared tool
result, with no wiring besides the middleware."""

from __future__ import annotations

import re

import pytest
from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_core.tracers.langchain import wait_for_all_tracers
from langsmith import Client
from langsmith import utils as ls_utils

from meclear_integrations.langchain import MeClearMiddleware, SimulatedChatModel, reference_config
from meclear_integrations.langchain.clearing_step import CLEARANCE_RUN_NAME
from tests.support.servers import LangSmithRecorder, serve


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch):
    recorder = LangSmithRecorder()
    with serve(recorder) as url:
        monkeypatch.setenv("LANGSMITH_ENDPOINT", url)
        monkeypatch.setenv("LANGSMITH_API_KEY", "dummy")
        monkeypatch.setenv("LANGSMITH_TRACING", "true")
        monkeypatch.setenv("LANGSMITH_DISABLE_RUN_COMPRESSION", "true")
        ls_utils.get_env_var.cache_clear()
        yield recorder
    ls_utils.get_env_var.cache_clear()


def test_agent_trace_holds_the_clearance(recorder, case, documents) -> None:
    @tool(response_format="content_and_artifact")
    def search_memories(query: str):
        """Search the user's memories."""
        return "\n\n".join(d.page_content for d in documents), documents

    llm = SimulatedChatModel.from_case(case)
    agent = create_agent(llm, tools=[search_memories], middleware=[MeClearMiddleware(llm=llm)])
    out = agent.invoke(
        {"messages": [("user", case.query)]}, config=reference_config(case.reference)
    )
    assert out["messages"][-1].text == "December 2023"
    wait_for_all_tracers()
    Client().flush()
    body = recorder.body.decode("utf-8", "replace")
    assert recorder.requests, "nothing was posted to the recorder"
    assert CLEARANCE_RUN_NAME in body and "MeClearMiddleware.wrap_tool_call" in body
    assert re.search(r'"cleared_ids":\s*\[\s*"f1",\s*"f2"\s*\]', body)
