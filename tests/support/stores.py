"""Checks every LangGraph store under ClearingStore must pass (InMemoryStore, PostgresStore).

:func:`check_behaves_as_the_store` plays one sequence of operations on a raw store and on
the same kind of store behind a ``ClearingStore`` (with clearance configured but no query to
clear) and compares every result; :func:`check_clears_and_gates` runs a cleared search and an
admission-gated put; :func:`check_hostile_namespaces` writes and reads labels that are hard
to encode. SIMULATED task agent and judge; SCRIPTED admission model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.langchain import SimulatedChatModel, reference_config
from meclear_integrations.langgraph import ClearingStore
from meclear_integrations.langgraph.items import memory_id
from meclear_integrations.simulation import SimulatedCase

NAMESPACE = ("memories", "john")
CONVERSATION = [
    {
        "role": "user",
        "content": "I'm allergic to shellfish, so never suggest shrimp dishes to me. "
        "What's a quick weeknight dinner?",
    },
    {"role": "assistant", "content": "Try a lemon-garlic chicken traybake."},
]
HOSTILE = [
    ("users", "a/b", "c"),
    ("users", "a", "b/c"),
    ("users", "100%", "x"),
    ("users", "O'Brien; DROP TABLE store;--", "x"),
    ("users", 'quote"d', "x"),
    ("users", "new\nline", "x"),
    ("users", "ünï©ødé ✓", "x"),
    ("users", "spa ce", "x"),
    ("users", "%2F", "x"),
    ("users", "*", "?"),
]


def _plain(result: Any) -> Any:
    """Results as comparable data (timestamps differ between two stores)."""
    if isinstance(result, list):
        return [_plain(r) for r in result]
    if hasattr(result, "value") and hasattr(result, "key"):
        return (tuple(result.namespace), result.key, result.value)
    return result


def _ops(case: SimulatedCase) -> list[list[Any]]:
    puts = [
        PutOp(NAMESPACE, m.id, {"content": m.content, "n": i}) for i, m in enumerate(case.memories)
    ]
    return [
        puts,
        [PutOp(("memories", "ann"), "a1", {"content": "Ann likes tea.", "n": 99})],
        [GetOp(NAMESPACE, "f1"), GetOp(NAMESPACE, "missing")],
        [SearchOp(("memories",), filter={"n": 2}, limit=5)],
        [SearchOp(NAMESPACE, limit=3, offset=1)],
        [ListNamespacesOp(limit=10)],
        [PutOp(NAMESPACE, "f1", None)],  # delete
        [GetOp(NAMESPACE, "f1"), ListNamespacesOp(max_depth=1)],
    ]


def check_behaves_as_the_store(make: Callable[[], BaseStore], case: SimulatedCase) -> None:
    """Every non-query operation returns what the wrapped store returns (sync and async)."""
    llm = SimulatedChatModel.from_case(case)
    for asynchronous in (False, True):
        raw, wrapped = make(), ClearingStore(make(), llm=llm)
        for ops in _ops(case):
            if asynchronous:
                got = asyncio.run(wrapped.abatch(ops))
                want = asyncio.run(raw.abatch(ops))
            else:
                got, want = wrapped.batch(ops), raw.batch(ops)
            assert _plain(got) == _plain(want), ops
        assert _plain(wrapped.search(NAMESPACE)) == _plain(raw.search(NAMESPACE))
        assert wrapped.list_namespaces(prefix=("memories",)) == raw.list_namespaces(
            prefix=("memories",)
        )


def fill(store: BaseStore, case: SimulatedCase, namespace: tuple[str, ...] = NAMESPACE) -> None:
    """Put the case's memories under ``namespace``."""
    for m in case.memories:
        store.put(namespace, m.id, {"content": m.content})


def kept_order(store: BaseStore, namespace: tuple[str, ...] = NAMESPACE) -> list[str]:
    """The keys the wrapped store returns, in its order, without the two stale memories."""
    raw = store.store if isinstance(store, ClearingStore) else store
    return [i.key for i in raw.search(namespace, limit=10) if i.key not in ("f1", "f2")]


def search_in_run(store: BaseStore, case: SimulatedCase, namespace=NAMESPACE) -> list[str]:
    """Keys a search returns inside a runnable run carrying the case's reference."""
    recall = RunnableLambda(lambda q: store.search(namespace, query=q, limit=10))
    return [i.key for i in recall.invoke(case.query, config=reference_config(case.reference))]


async def asearch_in_run(store: BaseStore, case: SimulatedCase, namespace=NAMESPACE) -> list[str]:
    """Async :func:`search_in_run`."""

    async def recall(q: str) -> list[Any]:
        return await store.asearch(namespace, query=q, limit=10)

    runnable = RunnableLambda(recall)
    items = await runnable.ainvoke(case.query, config=reference_config(case.reference))
    return [i.key for i in items]


def check_clears_and_gates(make: Callable[[], BaseStore], case: SimulatedCase) -> None:
    """A query search is cleared (sync, async); a put passes the admission gate."""
    llm = SimulatedChatModel.from_case(case)
    store = ClearingStore(make(), llm=llm, annotate=True)
    fill(store, case)
    assert search_in_run(store, case) == kept_order(store)
    assert sorted(kept_order(store)) == ["b1", "b2", "b3", "g1"]
    assert asyncio.run(asearch_in_run(store, case)) == kept_order(store)
    [item] = [i for i in store.search(NAMESPACE, query=case.query, limit=10) if i.key == "g1"]
    assert item.value["meclear"]["memory_id"] == "memories/john/g1"
    assert store.get(NAMESPACE, "g1").value == {"content": case.texts["g1"]}  # stored untouched

    gate = ClearingStore(make(), admission=ConMemAdmitter(ScriptedAdmissionModel()))
    gate.put(
        ("prefs",),
        "m1",
        {"content": "User is allergic to shellfish.", "historical_context": CONVERSATION},
    )
    gate.put(
        ("prefs",),
        "m3",
        {"content": "User is strictly vegetarian.", "historical_context": CONVERSATION},
    )
    assert gate.get(("prefs",), "m1").value == {"content": "User is allergic to shellfish."}
    assert gate.get(("prefs",), "m3") is None
    with pytest.raises(Exception, match="historical_context"):
        gate.put(("prefs",), "m5", {"content": "User is strictly vegetarian."})
    gated = ClearingStore(
        make(), admission=ConMemAdmitter(ScriptedAdmissionModel()), context=CONVERSATION
    )
    asyncio.run(gated.aput(("prefs",), "m1", {"content": "User is allergic to shellfish."}))
    asyncio.run(gated.aput(("prefs",), "m3", {"content": "User is strictly vegetarian."}))
    assert [i.key for i in gated.search(("prefs",))] == ["m1"]  # m3 was rejected
    gated.delete(("prefs",), "m1")  # a delete is never gated
    assert gated.get(("prefs",), "m1") is None


def check_hostile_namespaces(make: Callable[[], BaseStore], case: SimulatedCase) -> None:
    """Hard labels round-trip with distinct memory ids; a period is refused clearly."""
    store = ClearingStore(make(), llm=SimulatedChatModel.from_case(case))
    ids = set()
    for *labels, key in HOSTILE:
        namespace = tuple(labels)
        store.put(namespace, key, {"content": f"note in {namespace!r}"})
        assert store.get(namespace, key).value == {"content": f"note in {namespace!r}"}
        ids.add(memory_id(namespace, key))
    assert len(ids) == len(HOSTILE)  # ('a/b', 'c') and ('a', 'b/c') differ
    found = store.search(("users",), limit=50)
    assert {(tuple(i.namespace), i.key) for i in found} == {(tuple(h[:-1]), h[-1]) for h in HOSTILE}
    # clearance on a hostile namespace: the case's memories behind every hard label
    hostile = ("users", "O'Brien; DROP TABLE store;--", "a/b%2F")
    fill(store, case, hostile)
    assert search_in_run(store, case, hostile) == kept_order(store, hostile)
    with pytest.raises(InvalidNamespaceError, match="period"):
        store.put(("users", "a.b"), "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError):
        store.put(("users", ""), "k", {"content": "x"})
