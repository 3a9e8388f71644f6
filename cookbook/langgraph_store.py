"""A LangGraph graph with long-term memory in a store, and ClearingStore wrapped around it.

Offline: the answering model and the task agent / judge are the SIMULATED evidence world as
a LangChain chat model (figures are simulated, not a real model's); the admission decisions
come from the SCRIPTED ConMem stand-in. The store holds the paper's redundant-harm case
(John in Italy): one memory says December 2023, two paraphrased stale ones say January 2023.

What it shows:

1. the graph over a plain ``InMemoryStore`` answers January 2023;
2. the same graph compiled with ``ClearingStore(store, llm=llm, mode="background", ...)``:
   the first ask makes no clearance model call on the search path and queues an audit; the
   audit (here run on this thread; a worker thread or ``meclear worker`` in production)
   verifies the harm and records it in the ledger; the next ask withholds the two stale
   memories and answers December 2023;
3. ``mode="clear"`` clears inline (the search costs the clearance's model calls);
4. with ``admission=`` a ``put`` is written only when ConMem admits it.

Run: ``python cookbook/langgraph_store.py`` (needs ``meclear-integrations[langgraph]``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.langchain import Loop, SimulatedChatModel, reference_config
from meclear_integrations.langgraph import ClearingStore
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.simulation import redundant_harm_example

NAMESPACE = ("memories", "john")
CONVERSATION = [
    {
        "role": "user",
        "content": "I'm allergic to shellfish, so never suggest shrimp dishes to me. "
        "What's a quick weeknight dinner?",
    },
    {"role": "assistant", "content": "Try a lemon-garlic chicken traybake."},
]


class State(TypedDict, total=False):
    question: str
    memories: list[str]
    answer: str


def build(store: BaseStore, llm: Any) -> Any:
    """recall (store search) -> answer (the model reads the memories)."""

    def recall(state: State, config: RunnableConfig, *, store: BaseStore) -> State:
        found = store.search(NAMESPACE, query=state["question"], limit=10)
        return {"memories": [item.key for item in found]}

    def answer(state: State, *, store: BaseStore) -> State:
        texts = [store.get(NAMESPACE, key).value["content"] for key in state["memories"]]
        prompt = "Memories: " + " ".join(texts) + f" Question: {state['question']}"
        return {"answer": llm.invoke(prompt).text}

    graph = StateGraph(State).add_node(recall).add_node(answer)
    graph = graph.add_edge("__start__", "recall").add_edge("recall", "answer")
    return graph.compile(store=store)


def main() -> dict[str, Any]:
    """Ask the graph over a plain and a clearing store; print and return what happened."""
    case = redundant_harm_example()
    llm = SimulatedChatModel.from_case(case)  # e.g. ChatOpenAI(model="gpt-4o-mini")
    config = reference_config(case.reference)  # the gold answer, when you have one
    ask = {"question": case.query}
    print("model: SIMULATED evidence world (offline)")
    print(f"question: {case.query}   (reference: {case.reference})\n")

    memories = InMemoryStore()
    for m in case.memories:
        memories.put(NAMESPACE, m.id, {"content": m.content})
    calls = llm.stand_in.calls  # the SIMULATED model's replies (answers and verdicts)
    plain = build(memories, llm).invoke(ask, config=config)
    per_ask, calls = llm.stand_in.calls - calls, llm.stand_in.calls  # the answer's own call
    print(f"InMemoryStore                -> {plain['answer']}")

    with tempfile.TemporaryDirectory() as tmp:
        ledger = HarmLedger(Path(tmp) / "ledger.db")
        # the clearance: wrap the store (audit_workers=0: audits run below, on this thread)
        store = ClearingStore(
            memories, llm=llm, mode="background", loop=Loop(ledger=ledger, audit_workers=0)
        )
        graph = build(store, llm)
        first = graph.invoke(ask, config=config)
        on_search_path = llm.stand_in.calls - calls - per_ask
        print(f"ClearingStore, first ask     -> {first['answer']}   (audit queued, ", end="")
        print(f"+{on_search_path} model calls on the search path)")
        [outcome] = store.run_audits()
        [run] = ledger.runs()
        print(f"audit {outcome.state}: verified harmful {sorted(run.cleared_ids)}")
        second = graph.invoke(ask, config=config)
        print(f"ClearingStore, next ask      -> {second['answer']}   kept {second['memories']}")
        store.close()
        ledger.close()

    calls = llm.stand_in.calls
    inline = build(ClearingStore(memories, llm=llm), llm).invoke(ask, config=config)
    inline_calls = llm.stand_in.calls - calls - per_ask
    print(f'ClearingStore(mode="clear")  -> {inline["answer"]}   (+{inline_calls} model calls)\n')

    gated = ClearingStore(InMemoryStore(), admission=ConMemAdmitter(ScriptedAdmissionModel()))
    for key, text in [
        ("m1", "User is allergic to shellfish."),
        ("m3", "User is strictly vegetarian."),
    ]:
        gated.put(("prefs",), key, {"content": text, "historical_context": CONVERSATION})
    admitted = [item.key for item in gated.search(("prefs",))]
    print(f"admission (SCRIPTED): written {admitted} of ['m1', 'm3']")
    return {
        "plain": plain["answer"],
        "first": first["answer"],
        "search_path_calls": on_search_path,
        "inline_calls": inline_calls,
        "verified": sorted(run.cleared_ids),
        "second": second["answer"],
        "inline": inline["answer"],
        "admitted": admitted,
    }


if __name__ == "__main__":
    main()
