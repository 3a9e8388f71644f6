"""ChatOpenAI against a stub server on 127.0.0.1 failing on chosen requests: 429 (with and
without retry-after), 500 and garbage bodies. The client's own retries are off
(``max_retries=0``), so what recovers is the engine's retry policy."""

from __future__ import annotations

import json
import threading

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from langchain_openai import ChatOpenAI

from meclear_integrations import ClearanceConfig
from meclear_integrations.langchain import ClearingRetriever, reference_config
from meclear_integrations.simulation import StandInModel, redundant_harm_example
from tests.support.servers import OpenAIStub, serve

KEPT = ["g1", "b1", "b2", "b3"]
FAST = ClearanceConfig(
    budget={"max_concurrency": 1},
    failure={"retry": {"initial_backoff": 0.0, "jitter": 0.0, "max_attempts": 3}},
)


class FaultyStub:
    """The OpenAI stub, but request n (1-based) in ``plan`` gets a fault instead."""

    def __init__(self, stub: OpenAIStub, plan: dict[int, str]) -> None:
        self.stub = stub
        self.plan = plan
        self.seen: list[str] = []
        self._lock = threading.Lock()
        self._n = 0

    def __call__(self, method: str, path: str, body: bytes):  # type: ignore[no-untyped-def]
        with self._lock:
            self._n += 1
            fault = self.plan.get(self._n, "ok")
            self.seen.append(fault)
        error = json.dumps({"error": {"message": fault, "type": fault}}).encode()
        if fault == "429":
            return 429, {"retry-after-ms": "5"}, error
        if fault == "429-bare":
            return 429, {}, error
        if fault == "500":
            return 500, {}, error
        if fault == "garbage":
            return 200, {}, b"<html>not json at all"
        return self.stub(method, path, body)


def _run(plan: dict[int, str], **kwargs):  # type: ignore[no-untyped-def]
    case = redundant_harm_example()
    stub = FaultyStub(OpenAIStub(StandInModel.from_case(case).reply), plan)
    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]

    with serve(stub) as url:
        llm = ChatOpenAI(
            base_url=f"{url}/v1", api_key="sk-test-abcdefghijklmnop", model="stub", max_retries=0
        )
        retriever = ClearingRetriever(
            retriever=RunnableLambda(lambda q: [d.model_copy() for d in docs]),
            llm=llm,
            clearance=kwargs.pop("clearance", FAST),
            **kwargs,
        )
        out = retriever.invoke(case.query, config=reference_config(case.reference))
    return out, stub


@pytest.mark.parametrize("fault", ["429", "429-bare", "500"])
def test_transient_http_faults_are_retried_by_the_engine(fault: str) -> None:
    out, stub = _run({1: fault, 2: fault, 7: fault})
    assert [d.id for d in out] == KEPT
    assert stub.seen[:3] == [fault, fault, "ok"]


def test_garbage_body_fails_open_with_the_full_context() -> None:
    out, _ = _run({1: "garbage"})
    assert [d.id for d in out] == ["g1", "b1", "f1", "b2", "f2", "b3"]
    meta = out[0].metadata["meclear"]
    assert meta["status"] == "failed" and meta["failure"]["reason"] == "evaluator_error"
    assert "sk-test" not in json.dumps(meta)


def test_provider_down_fails_open_after_bounded_retries() -> None:
    out, stub = _run({n: "500" for n in range(1, 100)})
    assert [d.metadata["meclear"]["status"] for d in out] == ["failed"] * 6
    assert len(stub.seen) == 3  # one evaluator call, three attempts, then fail open
