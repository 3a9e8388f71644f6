"""MeClearMiddleware in a real ``create_agent`` loop (SIMULATED tool-calling agent and judge).

The agent's model is ``SimulatedChatModel`` with tools bound: it calls the first tool with the
user's question, then answers as the simulated world's reader from what the conversation
shows. Without clearance the two stale memories win (January 2023); with the middleware the
retrieval tool's result is cleared and the answer recovers (December 2023).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool

from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.langchain import (
    Loop,
    MeClearCompressor,
    MeClearMiddleware,
    SimulatedChatModel,
    reference_config,
)
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.simulation import SimulatedCase


class Runs(BaseCallbackHandler):
    """Chain runs by name, chat-model calls and custom events seen under an agent run."""

    def __init__(self) -> None:
        self.chains: list[str] = []
        self.parents: dict[str, Any] = {}
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.model_calls = 0

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        name = kwargs.get("name") or ""
        self.chains.append(name)
        self.parents[str(kwargs["run_id"])] = (name, kwargs.get("parent_run_id"))

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.model_calls += 1

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.events.append((name, data))


def _search_tool(documents: list[Document]):
    @tool(response_format="content_and_artifact")
    def search_memories(query: str):
        """Search the user's memories."""
        return "\n\n".join(d.page_content for d in documents), list(documents)

    return search_memories


def _ask(case: SimulatedCase) -> dict[str, Any]:
    return {"messages": [("user", case.query)]}


def _tool_message(state: dict[str, Any]) -> ToolMessage:
    [message] = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    return message


def test_without_the_middleware_the_stale_memories_win(case, documents) -> None:
    llm = SimulatedChatModel.from_case(case)
    agent = create_agent(llm, tools=[_search_tool(documents)])
    out = agent.invoke(_ask(case), config=reference_config(case.reference))
    assert out["messages"][-1].text == "January 2023"


def test_sync_agent_loop_clears_the_retrieval_result(case, documents) -> None:
    llm = SimulatedChatModel.from_case(case)
    agent = create_agent(
        llm, tools=[_search_tool(documents)], middleware=[MeClearMiddleware(llm=llm)]
    )
    runs = Runs()
    out = agent.invoke(_ask(case), config={**reference_config(case.reference), "callbacks": [runs]})
    assert out["messages"][-1].text == "December 2023"
    message = _tool_message(out)
    assert [d.id for d in message.artifact] == ["g1", "b1", "b2", "b3"]
    assert message.content == "\n\n".join(d.page_content for d in message.artifact)
    assert all(d.metadata["meclear"]["cleared"] is False for d in message.artifact)
    assert [d.id for d in documents] == ["g1", "b1", "f1", "b2", "f2", "b3"]  # inputs untouched
    assert not any("MeClearMiddleware" in n for n in agent.get_graph().nodes)  # no extra node
    # the clearance run sits under the agent's tools node, events reach the handlers
    assert runs.chains.count("meclear_clearance") == 1
    [(_, parent)] = [v for v in runs.parents.values() if v[0] == "meclear_clearance"]
    assert runs.parents[str(parent)][0] == "tools"
    ends = [d for n, d in runs.events if n == "meclear.clearance" and d["phase"] == "end"]
    assert sorted(ends[-1]["cleared_ids"]) == ["f1", "f2"]


def test_async_agent_loop_clears_the_retrieval_result(case, documents) -> None:
    llm = SimulatedChatModel.from_case(case)
    agent = create_agent(
        llm, tools=[_search_tool(documents)], middleware=[MeClearMiddleware(llm=llm)]
    )
    out = asyncio.run(agent.ainvoke(_ask(case), config=reference_config(case.reference)))
    assert out["messages"][-1].text == "December 2023"
    assert [d.id for d in _tool_message(out).artifact] == ["g1", "b1", "b2", "b3"]


def test_streaming_and_events(case, documents) -> None:
    llm = SimulatedChatModel.from_case(case)
    agent = create_agent(
        llm, tools=[_search_tool(documents)], middleware=[MeClearMiddleware(llm=llm)]
    )
    config = reference_config(case.reference)
    updates = list(agent.stream(_ask(case), config=config, stream_mode="updates"))
    tools = [u["tools"] for u in updates if "tools" in u]
    assert [d.id for d in tools[0]["messages"][0].artifact] == ["g1", "b1", "b2", "b3"]
    tokens = [
        chunk.text
        for chunk, meta in agent.stream(_ask(case), config=config, stream_mode="messages")
        if meta.get("langgraph_node") == "model"
    ]
    assert "".join(tokens).strip() == "December 2023"

    async def events() -> list[dict[str, Any]]:
        return [e async for e in agent.astream_events(_ask(case), config=config, version="v2")]

    seen = asyncio.run(events())
    custom = [e["name"] for e in seen if e["event"] == "on_custom_event"]
    assert "meclear.clearance" in custom and "meclear.attribution" in custom
    assert any(e["event"] == "on_chain_end" and e["name"] == "meclear_clearance" for e in seen)


def test_results_that_are_not_documents_pass_untouched(case) -> None:
    @tool
    def clock() -> str:
        """The time."""
        return "12:00"

    @tool(response_format="content_and_artifact")
    def weather(city: str):
        """The weather."""
        return "sunny", {"city": city, "documents": ["not", "documents"]}

    @tool(response_format="content_and_artifact")
    def mixed(query: str):
        """Documents and a string."""
        return "x", [Document(page_content="a"), "b"]

    @tool
    def broken(query: str) -> str:
        """Always fails."""
        raise ValueError("no")

    llm = SimulatedChatModel.from_case(case)
    middleware = MeClearMiddleware(llm=llm)
    for tool_ in (clock, weather, mixed):
        runs = Runs()
        agent = create_agent(llm, tools=[tool_], middleware=[middleware])
        out = agent.invoke(_ask(case), config={"callbacks": [runs]})
        reference = create_agent(llm, tools=[tool_]).invoke(_ask(case))
        got, want = _tool_message(out), _tool_message(reference)
        assert (got.content, got.artifact) == (want.content, want.artifact)
        assert "meclear_clearance" not in runs.chains
    agent = create_agent(llm, tools=[broken], middleware=[middleware])
    with pytest.raises(ValueError, match="no"):
        agent.invoke(_ask(case))


def test_only_the_named_tools_are_cleared(case, documents) -> None:
    llm = SimulatedChatModel.from_case(case)
    middleware = MeClearMiddleware(llm=llm, tools=["other_tool"])
    agent = create_agent(llm, tools=[_search_tool(documents)], middleware=[middleware])
    out = agent.invoke(_ask(case), config=reference_config(case.reference))
    assert len(_tool_message(out).artifact) == 6
    assert out["messages"][-1].text == "January 2023"


def test_a_parser_reads_documents_from_text(case) -> None:
    @tool
    def recall(query: str) -> str:
        """Recall memories as JSON."""
        return json.dumps([{"id": m.id, "text": m.content} for m in case.memories])

    def parse(message: ToolMessage) -> list[Document] | None:
        try:
            rows = json.loads(message.text)
        except ValueError:
            return None
        return [Document(page_content=r["text"], id=r["id"]) for r in rows]

    llm = SimulatedChatModel.from_case(case)
    middleware = MeClearMiddleware(
        llm=llm, parse=parse, render=lambda ds: " | ".join(d.page_content for d in ds)
    )
    agent = create_agent(llm, tools=[recall], middleware=[middleware])
    out = agent.invoke(_ask(case), config=reference_config(case.reference))
    assert [d.id for d in _tool_message(out).artifact] == ["g1", "b1", "b2", "b3"]
    assert " | " in _tool_message(out).text
    assert out["messages"][-1].text == "December 2023"


def test_injected_context_is_cleared_once_per_turn(case, documents) -> None:
    retrievals: list[str] = []

    def retrieve(question: str) -> list[Document]:
        retrievals.append(question)
        return list(documents)

    @tool
    def clock() -> str:
        """The time."""
        return "12:00"

    llm = SimulatedChatModel.from_case(case)
    middleware = MeClearMiddleware(llm=llm, retriever=RunnableLambda(retrieve))
    agent = create_agent(llm, tools=[clock], middleware=[middleware], system_prompt="Be brief.")
    runs = Runs()
    out = agent.invoke(_ask(case), config={**reference_config(case.reference), "callbacks": [runs]})
    assert out["messages"][-1].text == "December 2023"
    assert retrievals == [case.query]  # two model calls, one retrieval and one clearance
    assert "MeClearMiddleware.before_model" in agent.get_graph().nodes
    assert isinstance(middleware, MeClearMiddleware) and middleware.name == "MeClearMiddleware"
    assert runs.chains.count("meclear_clearance") == 1
    assert "meclear_context" not in out  # private state
    out = asyncio.run(agent.ainvoke(_ask(case), config=reference_config(case.reference)))
    assert out["messages"][-1].text == "December 2023"


def test_without_clearance_injected_context_keeps_the_stale_answer(case, documents) -> None:
    llm = SimulatedChatModel.from_case(case)
    shadow = MeClearMiddleware(
        llm=llm, retriever=RunnableLambda(lambda q: documents), mode="shadow"
    )
    agent = create_agent(llm, tools=[], middleware=[shadow])
    out = agent.invoke(_ask(case), config=reference_config(case.reference))
    assert out["messages"][-1].text == "January 2023"  # shadow drops nothing


def test_background_mode_withholds_after_the_audit(case, documents, tmp_path) -> None:
    llm = SimulatedChatModel.from_case(case)
    ledger = HarmLedger(tmp_path / "ledger.db")
    middleware = MeClearMiddleware(
        llm=llm, mode="background", loop=Loop(ledger=ledger, audit_workers=0)
    )
    agent = create_agent(llm, tools=[_search_tool(documents)], middleware=[middleware])
    config = reference_config(case.reference)
    runs = Runs()
    first = agent.invoke(_ask(case), config={**config, "callbacks": [runs]})
    assert len(_tool_message(first).artifact) == 6
    assert runs.model_calls == 2  # the agent's own two calls: no clearance on the request path
    [outcome] = middleware.run_audits()
    assert outcome.state == "done"
    second = agent.invoke(_ask(case), config=config)
    kept = _tool_message(second).artifact
    assert [d.id for d in kept] == ["g1", "b1", "b2", "b3"]
    assert {w["memory_id"] for w in kept[0].metadata["meclear"]["withheld"]} == {"f1", "f2"}
    assert second["messages"][-1].text == "December 2023"
    middleware.close()
    ledger.close()


def test_settings_are_checked(case) -> None:
    llm = SimulatedChatModel.from_case(case)
    with pytest.raises(Exception, match="llmm"):
        MeClearMiddleware(llmm=llm)
    with pytest.raises(ConfigurationError, match="not both"):
        MeClearMiddleware(clearing=MeClearCompressor(llm=llm), mode="shadow")
    with pytest.raises(ConfigurationError, match="context"):
        MeClearMiddleware(llm=llm, context_prompt="no placeholder")


def test_no_human_message_passes_untouched(case, documents) -> None:
    from langchain_core.messages import AIMessage

    llm = SimulatedChatModel.from_case(case)
    middleware = MeClearMiddleware(llm=llm)
    search = _search_tool(documents)
    call = {"name": "search_memories", "args": {"query": "x"}, "id": "c1"}
    state = {"messages": [AIMessage(content="", tool_calls=[call])]}

    class Request:
        tool_call = call
        runtime = None

    Request.state = state
    result = search.invoke({**call, "type": "tool_call"})
    assert middleware.wrap_tool_call(Request(), lambda r: result) is result


def test_injected_context_once_per_turn_across_a_checkpointed_thread(case, documents) -> None:
    """Each user turn of a thread retrieves and clears once, the same question asked again
    included; the cleared documents survive the checkpointer's serialisation."""
    from langgraph.checkpoint.memory import InMemorySaver

    retrievals: list[str] = []

    def retrieve(question: str) -> list[Document]:
        retrievals.append(question)
        return list(documents)

    llm = SimulatedChatModel.from_case(case)
    middleware = MeClearMiddleware(llm=llm, retriever=RunnableLambda(retrieve))
    agent = create_agent(llm, tools=[], middleware=[middleware], checkpointer=InMemorySaver())
    config = {**reference_config(case.reference), "configurable": {"thread_id": "t1"}}
    for _ in range(2):
        out = agent.invoke(_ask(case), config=config)
        assert out["messages"][-1].text == "December 2023"
    assert retrievals == [case.query, case.query]
    state = agent.get_state(config).values
    assert [d.id for d in state["meclear_context"]] == ["g1", "b1", "b2", "b3"]


def test_commands_and_errors_pass_untouched(case, documents) -> None:
    from langgraph.types import Command

    middleware = MeClearMiddleware(llm=SimulatedChatModel.from_case(case))
    call = {"name": "search_memories", "args": {"query": "x"}, "id": "c1"}

    from langchain_core.messages import HumanMessage

    class Request:
        tool_call = call
        runtime = None

    Request.state = {"messages": [HumanMessage(content=case.query)]}
    command = Command(update={"messages": []})
    assert middleware.wrap_tool_call(Request(), lambda r: command) is command
    failed = ToolMessage(content="boom", tool_call_id="c1", status="error", artifact=documents)
    assert middleware.wrap_tool_call(Request(), lambda r: failed) is failed

    async def handler(r: Any) -> Any:
        return command

    assert asyncio.run(middleware.awrap_tool_call(Request(), handler)) is command


def test_documents_flattened_to_text_are_named_once(case, documents) -> None:
    """A tool returning list[Document] without content_and_artifact loses the documents to
    their repr: the result passes untouched and a warning says how to declare the tool."""

    @tool
    def search_memories(query: str) -> list[Document]:
        """Search the user's memories."""
        return documents

    llm = SimulatedChatModel.from_case(case)
    agent = create_agent(llm, tools=[search_memories], middleware=[MeClearMiddleware(llm=llm)])
    with pytest.warns(UserWarning, match="content_and_artifact") as caught:
        agent.invoke(_ask(case))
        agent.invoke(_ask(case))
    assert len([w for w in caught if "content_and_artifact" in str(w.message)]) == 1
