"""``batch`` and ``abatch`` run one flow (``ClearingStore._batching``): the same admission
decisions, the same ops forwarded to the wrapped store (its ``batch`` on one path, its native
``abatch`` on the other), the same model prompts (each on its own model method), results,
events and errors. SIMULATED agent and judge, SCRIPTED admission."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableLambda
from langgraph.store.base import GetOp, Op, PutOp, Result, SearchOp
from langgraph.store.memory import InMemoryStore

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.langchain import reference_config
from meclear_integrations.langgraph import ClearingStore
from tests.support.recording_models import RecordingChat, canonical_prompts
from tests.support.stores import CONVERSATION, NAMESPACE, fill


class RecordingStore(InMemoryStore):
    """LangGraph's in-memory store, logging the ops of each ``batch`` / ``abatch``."""

    def __init__(self, refuse: bool = False) -> None:
        super().__init__()
        self.calls: list[tuple[str, list[str]]] = []
        self.refuse = refuse

    def _log(self, name: str, ops: Iterable[Op]) -> list[Op]:
        ops = list(ops)
        self.calls.append((name, [repr(op) for op in ops]))
        if self.refuse:
            raise PermissionError("read-only replica")
        return ops

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return super().batch(self._log("batch", ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await super().abatch(self._log("abatch", ops))


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.names.append(name)


def _store(case: Any, inner: RecordingStore) -> tuple[ClearingStore, RecordingChat]:
    llm = RecordingChat.from_case(case)
    admission = ConMemAdmitter(ScriptedAdmissionModel())
    store = ClearingStore(inner, llm=llm, admission=admission, context=CONVERSATION)
    return store, llm


def _ops(case: Any) -> list[Op]:
    return [
        SearchOp(NAMESPACE, query=case.query, limit=10),
        PutOp(("prefs",), "m1", {"content": "User is allergic to shellfish."}),
        PutOp(("prefs",), "m3", {"content": "User is strictly vegetarian."}),
        SearchOp(NAMESPACE, limit=10),
        GetOp(NAMESPACE, "g1"),
        SearchOp(("other",), query=case.query, limit=10),  # nothing found: nothing to clear
    ]


def _run(mode: str, store: ClearingStore, ops: list[Op], config: dict[str, Any]) -> Any:
    if mode == "async":
        return asyncio.run(RunnableLambda(store.abatch).ainvoke(ops, config=config))
    return RunnableLambda(store.batch).invoke(ops, config=config)


def _plain(result: Result) -> Any:
    if isinstance(result, list):
        return [(i.namespace, i.key, i.value) for i in result]
    return None if result is None else (result.namespace, result.key, result.value)


def test_both_paths_take_the_same_steps(case) -> None:
    runs = {}
    for mode in ("sync", "async"):
        inner = RecordingStore()
        store, llm = _store(case, inner)
        fill(inner, case)  # the memories as they are (not through the gate)
        inner.calls.clear()
        events = Events()
        config = {**reference_config(case.reference), "callbacks": [events]}
        results = _run(mode, store, _ops(case), config)
        runs[mode] = ([_plain(r) for r in results], inner.calls, llm, sorted(events.names))
    (s_res, s_calls, s_llm, s_events), (a_res, a_calls, a_llm, a_events) = (
        runs["sync"],
        runs["async"],
    )
    assert s_res == a_res
    assert [key for _, key, _ in s_res[0]] == ["g1", "b1", "b2", "b3"]  # cleared
    assert s_res[1] is None and s_res[2] is None  # puts: admitted and rejected alike
    assert len(s_res[3]) == 6 and s_res[4][1] == "g1" and s_res[5] == []
    # the rejected put never reaches the store; one batch call on each path's own method
    forwarded = ["SearchOp", "PutOp", "SearchOp", "GetOp", "SearchOp"]
    assert [[o.split("(")[0] for o in ops] for _, ops in s_calls] == [forwarded]
    assert [name for name, _ in s_calls] == ["batch"]
    assert [name for name, _ in a_calls] == ["abatch"]
    assert [ops for _, ops in s_calls] == [ops for _, ops in a_calls]
    assert s_llm.paths == {"sync"} and a_llm.paths == {"async"}
    assert canonical_prompts(s_llm.prompts) == canonical_prompts(a_llm.prompts) and s_llm.prompts
    assert "meclear.admission" in s_events and "meclear.clearance" in s_events
    assert s_events == a_events


def test_both_paths_raise_the_same_errors(case) -> None:
    no_context = [PutOp(("prefs",), "m1", {"content": "User is allergic to shellfish."})]
    for ops, refuse, error in (
        (no_context, False, ConfigurationError),
        ([SearchOp(NAMESPACE, query=case.query, limit=10)], True, PermissionError),
    ):
        raised = {}
        for mode in ("sync", "async"):
            inner = RecordingStore(refuse=refuse)
            store = ClearingStore(
                inner,
                llm=RecordingChat.from_case(case),
                admission=ConMemAdmitter(ScriptedAdmissionModel()),
            )
            with pytest.raises(error) as info:
                _run(mode, store, ops, reference_config(case.reference))
            raised[mode] = (str(info.value), [ops for _, ops in inner.calls])
        assert raised["sync"] == raised["async"]
    # a put without context raises before any op of its batch is written
    assert raised["sync"][1] == [[repr(SearchOp(NAMESPACE, query=case.query, limit=10))]]
