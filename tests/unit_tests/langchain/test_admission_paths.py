"""The admission gate and runnable take the same steps on both paths: the same model calls,
decisions, ``meclear.admission`` events, store writes (the store's sync methods on one path,
its native async twins on the other) and errors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.decision import AdmissionFailedError
from meclear_integrations.admission.errors import InvalidCandidateError
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.langchain.admission import (
    ADMISSION_EVENT,
    AdmissionGate,
    AdmissionRunnable,
    admitter_from_langchain,
)
from tests.support.stage_models import StageModel
from tests.unit_tests.admission.test_langchain import sample_documents


class Recorded:
    """The scripted stand-in behind a runnable that logs every prompt (path told apart)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.prompts: list[str] = []
        self.paths: set[str] = set()

    def complete(self, prompt: Any) -> Any:
        self.paths.add("sync")
        self.prompts.append(str(prompt))
        return self.model.complete(prompt)

    async def acomplete(self, prompt: Any) -> Any:
        self.paths.add("async")
        self.prompts.append(str(prompt))
        return await self.model.acomplete(prompt)

    def runnable(self) -> RunnableLambda:
        return RunnableLambda(self.complete, afunc=self.acomplete)


class RecordingStore(InMemoryVectorStore):
    """An in-memory vector store that logs which write method the gate called."""

    def __init__(self) -> None:
        super().__init__(DeterministicFakeEmbedding(size=16))
        self.writes: list[tuple[str, list[str | None]]] = []

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        self.writes.append(("add_documents", [d.id for d in documents]))
        return super().add_documents(documents, **kwargs)

    async def aadd_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        self.writes.append(("aadd_documents", [d.id for d in documents]))
        return await super().aadd_documents(documents, **kwargs)


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.events.append((name, data))


TIMING = {"cost": {"latency_seconds", "wall_seconds"}}
"""The decision's measured times: the only fields the two paths may differ in."""


def _decisions(decisions: list[Any]) -> list[dict[str, Any]]:
    return [d.model_dump(exclude=TIMING) for d in decisions]


def _run(mode: str, sync: Any, asynchronous: Any, *args: Any, **kwargs: Any) -> Any:
    if mode == "async":
        return asyncio.run(asynchronous(*args, **kwargs))
    return sync(*args, **kwargs)


def _outcome(call: Any) -> tuple[str, str]:
    try:
        result = call()
    except Exception as exc:  # the error is part of what both paths must share
        return type(exc).__name__, str(exc)
    return "ok", repr(result)


def test_the_gate_takes_the_same_steps_on_both_paths() -> None:
    docs, _ = sample_documents()
    runs = {}
    for mode in ("sync", "async"):
        model, store, handler = Recorded(ScriptedAdmissionModel()), RecordingStore(), Events()
        gate = AdmissionGate(store, admitter_from_langchain(model.runnable()))
        result = _run(
            mode, gate.add_documents, gate.aadd_documents, docs, config={"callbacks": [handler]}
        )
        runs[mode] = (result, model, store, handler)
    (s_res, s_model, s_store, s_events), (a_res, a_model, a_store, a_events) = (
        runs["sync"],
        runs["async"],
    )
    assert s_model.paths == {"sync"} and a_model.paths == {"async"}
    # the async path decides the candidates concurrently: the same prompts, in any order
    assert sorted(s_model.prompts) == sorted(a_model.prompts) and s_model.prompts
    assert _decisions(s_res.decisions) == _decisions(a_res.decisions)
    assert s_res.admitted == a_res.admitted and s_res.added_ids == a_res.added_ids
    assert s_res.admitted and len(s_res.admitted) < len(docs)  # a real filter
    assert s_store.writes == [("add_documents", [d.id for d in s_res.admitted])]
    assert a_store.writes == [("aadd_documents", [d.id for d in s_res.admitted])]
    assert s_store.store == a_store.store
    assert {n for n, _ in s_events.events} == {ADMISSION_EVENT}
    assert [e["candidate_id"] for _, e in s_events.events] == [d.id for d in docs]
    assert sorted(map(repr, s_events.events)) == sorted(map(repr, a_events.events))


def test_a_gate_that_admits_nothing_writes_nothing_on_both_paths() -> None:
    vegan = Document(id="v", page_content="User is vegan.")
    for mode in ("sync", "async"):
        store = RecordingStore()
        gate = AdmissionGate(store, admitter_from_langchain(RunnableLambda(lambda p: "no json")))
        result = _run(mode, gate.add_documents, gate.aadd_documents, [vegan], context="user: hi")
        assert result.admitted == [] and result.added_ids == [] and store.writes == []
        assert result.decisions[0].error is not None


@pytest.mark.parametrize(
    ("docs", "gate_kwargs", "error"),
    [
        ([Document(id="x", page_content="x")], {}, ConfigurationError),
        (
            [Document(id="x", page_content="", metadata={"historical_context": "user: hi"})],
            {},
            InvalidCandidateError,
        ),
        (
            [Document(id="x", page_content="y", metadata={"historical_context": "user: hi"})],
            {"on_error": "raise"},
            AdmissionFailedError,
        ),
    ],
)
def test_the_gate_raises_the_same_errors_on_both_paths(docs, gate_kwargs, error) -> None:
    outcomes = {}
    for mode in ("sync", "async"):
        store = RecordingStore()
        broken = ConMemAdmitter(StageModel(overrides={"audit": lambda p: "no json"}))
        gate = AdmissionGate(store, broken, **gate_kwargs)
        outcomes[mode] = _outcome(
            lambda g=gate, m=mode: _run(m, g.add_documents, g.aadd_documents, docs)
        )
        assert store.writes == []
    assert outcomes["sync"] == outcomes["async"]
    assert outcomes["sync"][0] == error.__name__


def test_the_runnable_takes_the_same_steps_on_both_paths() -> None:
    docs, _ = sample_documents(6)
    runs = {}
    for mode in ("sync", "async"):
        model, handler = Recorded(ScriptedAdmissionModel()), Events()
        runnable = AdmissionRunnable(admitter=admitter_from_langchain(model.runnable()))
        decisions = _run(
            mode, runnable.invoke, runnable.ainvoke, docs, config={"callbacks": [handler]}
        )
        runs[mode] = (decisions, model, handler)
    (s_dec, s_model, s_events), (a_dec, a_model, a_events) = runs["sync"], runs["async"]
    assert _decisions(s_dec) == _decisions(a_dec) and [d.candidate_id for d in s_dec] == [
        d.id for d in docs
    ]
    assert s_model.paths == {"sync"} and a_model.paths == {"async"}
    assert sorted(s_model.prompts) == sorted(a_model.prompts)
    assert [e["candidate_id"] for _, e in s_events.events] == [d.id for d in docs]
    assert sorted(map(repr, s_events.events)) == sorted(map(repr, a_events.events))


class Gauged(ConMemAdmitter):
    """An admitter that measures how many decisions are in flight at once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.in_flight = self.peak = 0

    def decide(self, *args: Any, **kwargs: Any) -> Any:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            return super().decide(*args, **kwargs)
        finally:
            self.in_flight -= 1

    async def adecide(self, *args: Any, **kwargs: Any) -> Any:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(0.01)  # let the other candidates start
            return await super().adecide(*args, **kwargs)
        finally:
            self.in_flight -= 1


def test_the_async_path_decides_at_most_max_concurrent_candidates_at_once() -> None:
    docs, _ = sample_documents(6)
    peaks = {}
    for mode in ("sync", "async"):
        admitter = Gauged(ScriptedAdmissionModel())
        runnable = AdmissionRunnable(admitter=admitter, max_concurrent_candidates=2)
        decisions = _run(mode, runnable.invoke, runnable.ainvoke, docs)
        assert len(decisions) == len(docs) and admitter.in_flight == 0
        peaks[mode] = admitter.peak
    assert peaks == {"sync": 1, "async": 2}
