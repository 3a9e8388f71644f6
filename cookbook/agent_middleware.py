"""A LangChain v1 agent (``create_agent``) with MeClearMiddleware added: one line of clearance.

Offline: the agent's model and the task agent / judge are the SIMULATED evidence world as a
LangChain chat model (with tools bound it calls the retrieval tool with the user's question,
then answers from what the tool returned); figures are simulated, not a real model's. The
memory store holds the paper's redundant-harm case (John in Italy): one memory says
December 2023, two paraphrased stale ones say January 2023.

What it shows:

1. the agent without the middleware answers January 2023 (the stale memories outvote);
2. the same agent with ``middleware=[MeClearMiddleware(llm=llm)]`` answers December 2023:
   the retrieval tool's documents are cleared for the user's question before the model
   reads them (sync, streamed, async);
3. the clearance is in the agent's run tree (``meclear_clearance`` under the ``tools``
   node, as LangSmith shows it) and its ``meclear.*`` events reach ``astream_events``.

Run: ``python cookbook/agent_middleware.py`` (needs ``meclear-integrations[langchain-agents]``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.tools import create_retriever_tool
from langchain_core.vectorstores import InMemoryVectorStore

from meclear_integrations.langchain import MeClearMiddleware, SimulatedChatModel, reference_config
from meclear_integrations.simulation import redundant_harm_example


class RunTree(BaseCallbackHandler):
    """Names each chain run's parent, to show where the clearance sits in the trace."""

    def __init__(self) -> None:
        self.runs: dict[str, tuple[str, Any]] = {}

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.runs[str(kwargs["run_id"])] = (kwargs.get("name") or "", kwargs.get("parent_run_id"))

    def parent_of(self, name: str) -> str:
        for run_name, parent in self.runs.values():
            if run_name == name:
                return self.runs[str(parent)][0]
        return "-"


def main() -> dict[str, Any]:
    """Ask the agent without and with the middleware; print and return what happened."""
    case = redundant_harm_example()
    llm = SimulatedChatModel.from_case(case)  # e.g. ChatOpenAI(model="gpt-4o-mini")
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    store.add_documents([Document(page_content=m.content, id=m.id) for m in case.memories])
    search = create_retriever_tool(
        store.as_retriever(search_kwargs={"k": 6}),
        "search_memories",
        "Search the user's memories.",
        response_format="content_and_artifact",  # the tool's documents reach the middleware
    )
    question = {"messages": [("user", case.query)]}
    config = reference_config(case.reference)  # the gold answer, when you have one
    print("model: SIMULATED evidence world (offline)")
    print(f"question: {case.query}   (reference: {case.reference})\n")

    calls = llm.stand_in.calls  # the SIMULATED model's replies (answers and verdicts)
    plain = create_agent(llm, tools=[search]).invoke(question, config=config)
    plain_calls, calls = llm.stand_in.calls - calls, llm.stand_in.calls
    print(f"create_agent                 -> {plain['messages'][-1].text}")

    # the one line of clearance:
    agent = create_agent(llm, tools=[search], middleware=[MeClearMiddleware(llm=llm)])

    tree = RunTree()
    out = agent.invoke(question, config={**config, "callbacks": [tree]})
    clearance_calls = llm.stand_in.calls - calls - plain_calls
    print(f"with MeClearMiddleware       -> {out['messages'][-1].text}", end="   ")
    print(f"(+{clearance_calls} model calls for the clearance)")
    streamed = "".join(
        chunk.text
        for chunk, meta in agent.stream(question, config=config, stream_mode="messages")
        if meta.get("langgraph_node") == "model"
    ).strip()
    print(f"same agent, streamed         -> {streamed}")

    async def run_async() -> tuple[str, list[str]]:
        events = []
        async for event in agent.astream_events(question, config=config, version="v2"):
            if event["event"] == "on_custom_event" and event["name"] == "meclear.clearance":
                events.append(event["data"])
            if event["event"] == "on_chain_end" and event["name"] == "LangGraph":
                answer = event["data"]["output"]["messages"][-1].text
        ends = [e for e in events if e.get("phase") == "end"]
        return answer, list(ends[-1]["cleared_ids"])

    answer, cleared = asyncio.run(run_async())
    print(f"same agent, astream_events   -> {answer}")
    print(f"event meclear.clearance      cleared {cleared}\n")

    tool_message = out["messages"][2]
    print("the tool's documents after clearance:", [d.id for d in tool_message.artifact])
    print("clearance run sits under node:", tree.parent_of("meclear_clearance"))
    return {
        "plain": plain["messages"][-1].text,
        "cleared": out["messages"][-1].text,
        "clearance_calls": clearance_calls,
        "streamed": streamed,
        "async": answer,
        "cleared_ids": cleared,
        "kept": [d.id for d in tool_message.artifact],
        "parent": tree.parent_of("meclear_clearance"),
    }


if __name__ == "__main__":
    main()
