"""ClearingStore on LangGraph's InMemoryStore (SIMULATED agent and judge, SCRIPTED admission)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tools import tool
from langgraph.store.base import PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.langchain import (
    Loop,
    MeClearCompressor,
    SimulatedChatModel,
    reference_config,
)
from meclear_integrations.langgraph import ClearingStore
from meclear_integrations.ledger import HarmLedger
from tests.support.stores import (
    NAMESPACE,
    check_behaves_as_the_store,
    check_clears_and_gates,
    check_hostile_namespaces,
    fill,
    search_in_run,
)


def test_behaves_as_the_wrapped_store(case) -> None:
    check_behaves_as_the_store(InMemoryStore, case)


def test_clears_searches_and_gates_puts(case) -> None:
    check_clears_and_gates(InMemoryStore, case)


def test_hostile_namespaces(case) -> None:
    check_hostile_namespaces(InMemoryStore, case)


def test_without_clearance_settings_searches_pass(case) -> None:
    store = ClearingStore(InMemoryStore())
    fill(store, case)
    assert len(search_in_run(store, case)) == 6


def test_batch_mixes_cleared_searches_and_other_ops(case) -> None:
    store = ClearingStore(InMemoryStore(), llm=SimulatedChatModel.from_case(case))
    fill(store, case)
    ops = [
        SearchOp(NAMESPACE, query=case.query, limit=10),
        PutOp(("other",), "k", {"content": "x"}),
        SearchOp(NAMESPACE, limit=10),
    ]
    from langchain_core.runnables import RunnableLambda

    config = reference_config(case.reference)
    cleared, put, listed = RunnableLambda(lambda o: store.batch(o)).invoke(ops, config=config)
    assert [i.key for i in cleared] == ["g1", "b1", "b2", "b3"]
    assert put is None and len(listed) == 6
    acleared, _, alisted = asyncio.run(RunnableLambda(store.abatch).ainvoke(ops, config=config))
    assert [i.key for i in acleared] == ["g1", "b1", "b2", "b3"] and len(alisted) == 6


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.names: list[str] = []
        self.chains: list[str] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.names.append(name)

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.chains.append(kwargs.get("name") or "")

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.chains.append("chat_model")


def test_background_mode_withholds_proven_harm_and_queues_audits(case, tmp_path) -> None:
    from langchain_core.runnables import RunnableLambda

    ledger = HarmLedger(tmp_path / "ledger.db")
    store = ClearingStore(
        InMemoryStore(),
        llm=SimulatedChatModel.from_case(case),
        mode="background",
        loop=Loop(ledger=ledger, audit_workers=0),
        annotate=True,
    )
    fill(store, case)
    events = Events()
    config = {**reference_config(case.reference), "callbacks": [events]}
    recall = RunnableLambda(lambda q: store.search(NAMESPACE, query=q, limit=10))
    first = recall.invoke(case.query, config=config)
    assert len(first) == 6 and "chat_model" not in events.chains  # no model call
    assert first[0].value["meclear"]["audit"]["job_id"]
    assert "meclear.clearance" in events.names
    [outcome] = store.run_audits()
    assert outcome.state == "done"
    second = recall.invoke(case.query, config=config)
    assert [i.key for i in second] == ["g1", "b1", "b2", "b3"]
    assert {w["memory_id"] for w in second[0].value["meclear"]["withheld"]} == {
        "memories/john/f1",
        "memories/john/f2",
    }
    # the harm is scoped: a paraphrase of the question is withheld too, another question not
    paraphrase = recall.invoke("Remind me: which month was John in Italy?", config=config)
    assert [i.key for i in paraphrase] == ["g1", "b1", "b2", "b3"]
    scopes = {w["scope"] for w in paraphrase[0].value["meclear"]["withheld"]}
    assert scopes == {"similar_query"}
    assert len(recall.invoke("Who recommended Florence to John?", config=config)) == 6
    # a memory whose text changed since the audit is no longer withheld
    store.put(NAMESPACE, "f1", {"content": "John's trip to Italy took place in December 2023."})
    third = recall.invoke(case.query, config=config)
    assert [i.key for i in third] == ["g1", "b1", "f1", "b2", "b3"]
    store.close()
    ledger.close()


def test_shadow_mode_drops_nothing(case) -> None:
    store = ClearingStore(
        InMemoryStore(), llm=SimulatedChatModel.from_case(case), mode="shadow", annotate=True
    )
    fill(store, case)
    from langchain_core.runnables import RunnableLambda

    recall = RunnableLambda(lambda q: store.search(NAMESPACE, query=q, limit=10))
    items = recall.invoke(case.query, config=reference_config(case.reference))
    assert len(items) == 6
    assert {i.key for i in items if i.value["meclear"]["cleared"]} == {"f1", "f2"}


def test_bad_configuration_is_refused(case) -> None:
    llm = SimulatedChatModel.from_case(case)
    with pytest.raises(ConfigurationError, match="BaseStore"):
        ClearingStore({}, llm=llm)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="not both"):
        ClearingStore(InMemoryStore(), clearing=MeClearCompressor(llm=llm), mode="shadow")
    with pytest.raises(Exception, match="llmm"):
        ClearingStore(InMemoryStore(), llmm=llm)
    with pytest.raises(ConfigurationError, match="run_audits"):
        ClearingStore(InMemoryStore()).run_audits()


def test_inside_a_langgraph_node(case) -> None:
    """The store a graph is compiled with: a node's search is cleared under the node's run."""
    from typing import TypedDict

    from langgraph.graph import StateGraph
    from langgraph.store.base import BaseStore

    class State(TypedDict):
        question: str
        keys: list[str]

    def recall(state: State, *, store: BaseStore) -> dict[str, Any]:
        return {"keys": [i.key for i in store.search(NAMESPACE, query=state["question"], limit=10)]}

    store = ClearingStore(InMemoryStore(), llm=SimulatedChatModel.from_case(case))
    fill(store, case)
    graph = StateGraph(State).add_node(recall).add_edge("__start__", "recall").compile(store=store)
    events = Events()
    config = {**reference_config(case.reference), "callbacks": [events]}
    out = graph.invoke({"question": case.query, "keys": []}, config=config)
    assert out["keys"] == ["g1", "b1", "b2", "b3"]
    assert "meclear_clearance" in events.chains
    out = asyncio.run(graph.ainvoke({"question": case.query, "keys": []}, config=config))
    assert out["keys"] == ["g1", "b1", "b2", "b3"]


def test_the_store_of_a_create_agent_agent(case) -> None:
    """LangChain v1's long-term memory: a tool searches ``runtime.store``; the store clears."""

    @tool
    def recall(query: str, runtime: ToolRuntime) -> str:
        """Recall the user's memories."""
        found = runtime.store.search(NAMESPACE, query=query, limit=10)
        return "\n\n".join(item.value["content"] for item in found)

    llm = SimulatedChatModel.from_case(case)
    plain = InMemoryStore()
    fill(plain, case)
    ask = {"messages": [("user", case.query)]}
    config = reference_config(case.reference)
    out = create_agent(llm, tools=[recall], store=plain).invoke(ask, config=config)
    assert out["messages"][-1].text == "January 2023"
    store = ClearingStore(plain, llm=llm)
    out = create_agent(llm, tools=[recall], store=store).invoke(ask, config=config)
    assert out["messages"][-1].text == "December 2023"


def test_an_admission_runnable_with_its_own_context_key() -> None:
    from meclear_integrations.admission import ConMemAdmitter
    from meclear_integrations.admission.scripted import ScriptedAdmissionModel
    from meclear_integrations.langchain import AdmissionRunnable
    from tests.support.stores import CONVERSATION

    runnable = AdmissionRunnable(
        admitter=ConMemAdmitter(ScriptedAdmissionModel()), context_key="conversation"
    )
    store = ClearingStore(InMemoryStore(), admission=runnable, context_key="chat")
    store.put(("p",), "m1", {"content": "User is allergic to shellfish.", "chat": CONVERSATION})
    store.put(("p",), "m3", {"content": "User is strictly vegetarian.", "chat": CONVERSATION})
    assert [i.key for i in store.search(("p",))] == ["m1"]
    assert store.get(("p",), "m1").value == {"content": "User is allergic to shellfish."}
