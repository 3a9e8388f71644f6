"""Shared limits in admission: every ConMem model call (each parse attempt) holds one slot
of the component's ``CallLimiter``; concurrent decisions never exceed its bound, through
the LangChain ``AdmissionRunnable`` / ``AdmissionGate`` and the LlamaIndex
``AdmissionTransform``, sync and async, and without a limiter they do."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core.schema import TextNode

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.langchain import AdmissionGate, AdmissionRunnable
from meclear_integrations.llama_index.admission import AdmissionTransform
from meclear_integrations.runtime.limiter import CallLimiter
from tests.support.limits import Gauge

CONVERSATION = [
    {"role": "user", "content": "I'm allergic to shellfish, never suggest shrimp to me."},
    {"role": "assistant", "content": "Noted: no shellfish."},
]
TEXTS = ["User is allergic to shellfish.", "User is strictly vegetarian."] * 3
LATENCY = 0.001  # without a limiter, decisions still overlap (peak 6 sync, 21 async)


class GaugedModel:
    """The scripted ConMem model (SCRIPTED, not an LLM), each call counted by ``gauge``."""

    def __init__(self, gauge: Gauge) -> None:
        self.gauge = gauge
        self.calls = 0
        self._inner = ScriptedAdmissionModel()
        self._lock = threading.Lock()

    def complete(self, prompt: str) -> str:
        with self.gauge.inside():
            with self._lock:
                self.calls += 1
            time.sleep(LATENCY)
            return self._inner.complete(prompt)

    async def acomplete(self, prompt: str) -> str:
        with self.gauge.inside():
            with self._lock:
                self.calls += 1
            await asyncio.sleep(LATENCY)
            return await self._inner.acomplete(prompt)


def _run(component: str, asynchronous: bool, gauge: Gauge, **kwargs: Any) -> GaugedModel:
    model = GaugedModel(gauge)
    admitter = ConMemAdmitter(model)
    docs = [Document(id=f"m{i}", page_content=t) for i, t in enumerate(TEXTS)]
    if component == "runnable":
        runnable = AdmissionRunnable(
            admitter=admitter, context=CONVERSATION, max_concurrent_candidates=6, **kwargs
        )
        decisions = asyncio.run(runnable.ainvoke(docs)) if asynchronous else runnable.invoke(docs)
    elif component == "gate":
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
        gate = AdmissionGate(store, admitter, max_concurrent_candidates=6, **kwargs)
        result = (
            asyncio.run(gate.aadd_documents(docs, context=CONVERSATION))
            if asynchronous
            else gate.add_documents(docs, context=CONVERSATION)
        )
        decisions = result.decisions
    else:
        transform = AdmissionTransform(
            admitter=admitter, context=CONVERSATION, max_concurrent_candidates=6, **kwargs
        )
        nodes = [TextNode(id_=d.id, text=d.page_content) for d in docs]
        asyncio.run(transform.acall(nodes)) if asynchronous else transform(nodes)
        decisions = None
    if decisions is not None:
        assert [d.decision for d in decisions] == ["store", "do_not_store"] * 3
    return model


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("component", ["runnable", "gate", "transform"])
def test_admission_calls_in_flight_are_bounded(component: str, asynchronous: bool) -> None:
    gauge = Gauge()
    limiter = CallLimiter(2)
    model = _run(component, asynchronous, gauge, limiter=limiter)
    assert gauge.peak <= 2
    stats = limiter.stats()
    assert stats.acquisitions == model.calls and stats.in_flight == 0


def test_without_a_limiter_admission_exceeds_the_bound() -> None:
    gauge = Gauge()
    _run("runnable", True, gauge)
    assert gauge.peak > 2


def test_the_admitters_own_limiter_and_max_calls_in_flight() -> None:
    gauge = Gauge()
    limiter = CallLimiter(1)
    admitter = ConMemAdmitter(GaugedModel(gauge), limiter=limiter)
    asyncio.run(admitter.adecide(TEXTS[0], CONVERSATION))
    assert gauge.peak == 1 and limiter.stats().acquisitions > 1
    gauge = Gauge()
    _run("transform", True, gauge, max_calls_in_flight=1)
    assert gauge.peak == 1


def test_admission_limiter_settings_are_strict() -> None:
    admitter = ConMemAdmitter(ScriptedAdmissionModel())
    with pytest.raises(ValueError, match="not both"):
        AdmissionRunnable(admitter=admitter, limiter=CallLimiter(2), max_calls_in_flight=2)
    with pytest.raises(ValueError, match="max_calls_in_flight"):
        AdmissionTransform(admitter=admitter, max_call_in_flight=2)
