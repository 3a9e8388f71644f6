"""Admission never raises on model misbehaviour, honours ``on_error``, cancels the sibling
decisions of a failure on every async path, and keeps secrets out of its decisions."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.runnables import RunnableLambda
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core.schema import TextNode

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.engine import AdmissionRequest
from meclear_integrations.langchain.admission import AdmissionGate, AdmissionRunnable
from meclear_integrations.llama_index.admission import AdmissionTransform
from tests.support.stage_models import Script, StageModel

KEY = "sk-proj-Zx9Qw8Er7Ty6Ui5Op4As3Df2"
CONTEXT = "user: I am vegetarian and I cook every evening."
REJECT = Script(
    labels={"relevant": "risk", "irrelevant": "risk", "risk": "risk"},
    preferences={"relevant": "control", "irrelevant": "control", "risk": "control"},
)
HUGE_CONFIDENCE = (
    '{"reason_type": "over_inference", "confidence": 1' + "0" * 400 + ', "explanation": "s"}'
)
DEEP = "[" * 100_000


def _reason_overflow() -> StageModel:
    return StageModel(REJECT, overrides={"reason": lambda p: HUGE_CONFIDENCE})


def test_a_400_digit_confidence_does_not_raise_out_of_decide() -> None:
    decision = ConMemAdmitter(_reason_overflow()).decide("User is vegetarian.", CONTEXT)
    assert decision.decision == "do_not_store"  # the decision stands
    assert decision.reason is not None and decision.reason.error is not None


async def test_a_400_digit_confidence_does_not_raise_out_of_adecide() -> None:
    decision = await ConMemAdmitter(_reason_overflow()).adecide("User is vegetarian.", CONTEXT)
    assert decision.decision == "do_not_store" and decision.reason.error is not None


@pytest.mark.parametrize("reply", [DEEP, '{"relevant": ' + DEEP, "9" * 5000, "x" * 2_000_000])
async def test_a_malformed_probe_reply_is_a_failed_stage_not_an_exception(reply: str) -> None:
    model = StageModel(overrides={"generate": lambda p: reply})
    for decision in (
        ConMemAdmitter(model).decide("User is vegetarian.", CONTEXT),
        await ConMemAdmitter(model).adecide("User is vegetarian.", CONTEXT),
    ):
        assert decision.decision is None and decision.error.stage == "probe_generation"


def _documents(n: int) -> list[Document]:
    return [
        Document(
            id=f"d{i}", page_content=f"User fact {i}.", metadata={"historical_context": CONTEXT}
        )
        for i in range(n)
    ]


async def test_async_gate_honours_on_error_admit_when_probes_are_malformed() -> None:
    model = StageModel(overrides={"generate": lambda p: DEEP})
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    gate = AdmissionGate(store, ConMemAdmitter(model), on_error="admit")
    result = await gate.aadd_documents(_documents(4))
    assert sorted(store.store) == ["d0", "d1", "d2", "d3"] and len(result.added_ids) == 4
    assert all(d.error is not None for d in result.decisions)


class Abort(BaseException):
    """Not model misbehaviour: an abort that must propagate (and stop everything)."""


class _AbortingModel(StageModel):
    """Candidate 'boom' aborts on its first call; the others are slow; every call's start
    time is recorded."""

    def __init__(self) -> None:
        super().__init__(delay=0.05)
        self.starts: list[float] = []
        self._guard = threading.Lock()

    async def acomplete(self, prompt: str) -> str:
        with self._guard:
            self.starts.append(time.monotonic())
        if "BOOM" in prompt:
            await asyncio.sleep(0.1)
            raise Abort
        return await super().acomplete(prompt)


def _boom_documents() -> list[Document]:
    docs = _documents(3)
    docs.append(Document(id="boom", page_content="BOOM", metadata={"historical_context": CONTEXT}))
    return docs


async def _no_sibling_keeps_running(model: _AbortingModel) -> None:
    raised = time.monotonic()  # the caller has the error now
    # A sibling left running is either still a task after this pause (the second check) or
    # has finished, with every call it started recorded (the first): together they hold
    # for any pause; it only lets cancelled siblings unwind (a few loop iterations).
    await asyncio.sleep(0.05)
    assert [t for t in model.starts if t > raised] == []  # no call started after it
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_langchain_gate_cancels_sibling_decisions_on_failure() -> None:
    model = _AbortingModel()
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    with pytest.raises(Abort):
        await AdmissionGate(store, ConMemAdmitter(model)).aadd_documents(_boom_documents())
    await _no_sibling_keeps_running(model)


async def test_llama_index_transform_cancels_sibling_decisions_on_failure() -> None:
    model = _AbortingModel()
    nodes = [TextNode(id_=d.id, text=d.page_content) for d in _boom_documents()]
    transform = AdmissionTransform(admitter=ConMemAdmitter(model), context=CONTEXT)
    with pytest.raises(Abort):
        await transform.acall(nodes)
    await _no_sibling_keeps_running(model)


async def test_adecide_many_cancels_sibling_decisions_on_failure() -> None:
    model = _AbortingModel()
    requests = [AdmissionRequest(d.page_content, CONTEXT, d.id) for d in _boom_documents()]
    with pytest.raises(Abort):
        await ConMemAdmitter(model).adecide_many(requests)
    await _no_sibling_keeps_running(model)


# ---------------------------------------------------------------- secrets
def _leaky_model() -> StageModel:
    def audit(prompt: str) -> BaseException:
        return RuntimeError(f"401 from provider: invalid api key {KEY}")

    return StageModel(overrides={"audit": audit, "judge": lambda p: f"not json, but the key {KEY}"})


def test_admission_decisions_and_their_traces_hold_no_secret() -> None:
    admitter = ConMemAdmitter(_leaky_model())
    decision = admitter.decide("User is vegetarian.", CONTEXT)
    assert decision.error is not None and decision.error.failures
    dumped = decision.model_dump_json()
    assert KEY not in dumped and "[REDACTED]" in dumped
    assert KEY not in json.dumps(decision.summary())
    collector = RunCollectorCallbackHandler()
    AdmissionRunnable(admitter=admitter).invoke(_documents(1), config={"callbacks": [collector]})
    traced = json.dumps([r.model_dump() for r in collector.traced_runs], default=str)
    assert KEY not in traced


def test_scripted_chat_control() -> None:
    """Control: a LangChain runnable over the stage model decides normally."""
    model = StageModel()
    chat = RunnableLambda(model.complete, afunc=model.acomplete)
    admitter = ConMemAdmitter(chat.invoke)
    assert admitter.decide("User is vegetarian.", CONTEXT).decision == "store"
