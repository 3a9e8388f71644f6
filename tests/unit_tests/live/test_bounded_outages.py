"""Bounded outages, hermetic: the circuit breaker's state machine, what a clearance tells
it, the live wall bound, the retry-free model copies, and a component whose provider
fails (scripted), LangChain and LlamaIndex, sync and async."""

from __future__ import annotations

import asyncio
import threading
import time
import warnings
from typing import Any

import pytest

from meclear_integrations.core.alerts import FailOpenWarning
from meclear_integrations.core.config import ClearanceConfig
from meclear_integrations.core.errors import BudgetExceededError
from meclear_integrations.core.failure_kind import CircuitOpenError
from meclear_integrations.guard.live_bounds import (
    LIVE_MAX_WALL_SECONDS,
    live_config,
    provider_outcome,
)
from meclear_integrations.runtime.breaker import CircuitBreaker
from meclear_integrations.runtime.retries import without_provider_retries
from meclear_integrations.simulation import redundant_harm_example
from tests.support.clocks import Clock


# ---------------------------------------------------------------- the state machine
def test_opens_after_consecutive_failures_and_skips_for_the_cooldown() -> None:
    clock = Clock(100.0)
    breaker = CircuitBreaker(failures=3, cooldown_seconds=10, clock=clock)
    for _ in range(2):
        assert breaker.admit().admitted
        breaker.record("failure")
    assert breaker.state == "closed"
    assert breaker.admit().admitted
    breaker.record("failure")
    assert breaker.state == "open"
    clock.now += 9.5
    declined = breaker.admit()
    assert not declined.admitted and declined.failures == 3
    assert declined.retry_in == pytest.approx(0.5)


def test_a_success_resets_the_count() -> None:
    breaker = CircuitBreaker(failures=2, clock=Clock(100.0))
    breaker.record("failure")
    breaker.record("success")
    breaker.record("failure")
    assert breaker.state == "closed"
    breaker.record("neutral")
    breaker.record("failure")
    assert breaker.state == "open"


def test_half_open_admits_one_probe_whose_outcome_decides() -> None:
    clock = Clock(100.0)
    breaker = CircuitBreaker(failures=1, cooldown_seconds=5, clock=clock)
    breaker.record("failure")
    clock.now += 5
    assert breaker.state == "half_open"
    probe = breaker.admit()
    assert probe.admitted and probe.probe
    assert not breaker.admit().admitted  # a second query while the probe runs
    breaker.record("failure", probe=True)  # the probe failed: open for another cool-down
    assert breaker.state == "open" and not breaker.admit().admitted
    clock.now += 5
    probe = breaker.admit()
    breaker.record("neutral", probe=True)  # says nothing: the next query probes
    probe = breaker.admit()
    assert probe.probe
    breaker.record("success", probe=True)
    assert breaker.state == "closed" and breaker.admit().admitted


@pytest.mark.parametrize(("failures", "cooldown"), [(0, 1.0), (True, 1.0), (1, 0), (1, -1.0)])
def test_bad_settings_raise(failures: Any, cooldown: Any) -> None:
    with pytest.raises(ValueError):
        CircuitBreaker(failures=failures, cooldown_seconds=cooldown)


def test_outcomes() -> None:
    assert provider_outcome(exc=TimeoutError("read timed out")) == "failure"
    assert provider_outcome(exc=BudgetExceededError("t", reason="time_budget")) == "failure"
    assert provider_outcome(exc=BudgetExceededError("c", reason="call_budget")) == "neutral"
    assert provider_outcome(exc=AttributeError("bug")) == "neutral"
    assert provider_outcome(exc=asyncio.CancelledError()) == "neutral"
    assert provider_outcome() == "neutral"


# ---------------------------------------------------------------- the wall bound
def test_live_wall_bound_unless_set_explicitly() -> None:
    assert live_config(ClearanceConfig()).budget.max_wall_seconds == LIVE_MAX_WALL_SECONDS
    assert live_config(ClearanceConfig.paper()).budget.max_wall_seconds == LIVE_MAX_WALL_SECONDS
    assert (
        live_config(ClearanceConfig(budget={"max_wall_seconds": None})).budget.max_wall_seconds
        is None
    )
    assert live_config(ClearanceConfig(budget={"max_wall_seconds": 5})).budget.max_wall_seconds == 5
    assert ClearanceConfig().budget.max_wall_seconds is None  # the bare engine keeps no bound


def test_components_use_the_live_bound() -> None:
    from langchain_core.language_models import FakeListLLM
    from langchain_core.runnables import RunnableLambda

    from meclear_integrations.langchain import ClearingRetriever

    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: []), llm=FakeListLLM(responses=["a"])
    )
    assert retriever._engine_config().budget.max_wall_seconds == LIVE_MAX_WALL_SECONDS
    unbounded = ClearingRetriever(
        retriever=RunnableLambda(lambda q: []),
        llm=FakeListLLM(responses=["a"]),
        clearance={"budget": {"max_wall_seconds": None}},
    )
    assert unbounded._engine_config().budget.max_wall_seconds is None


# ---------------------------------------------------------------- one retry layer
def test_llama_index_openai_copy_does_not_retry() -> None:
    from llama_index.llms.openai import OpenAI

    llm = OpenAI(model="gpt-4o-mini", api_base="http://127.0.0.1:9/v1", api_key="sk-test")
    llm._get_client()  # a client built before the copy keeps its pool, loses its retries
    clone = without_provider_retries(llm)
    assert clone.max_retries == 0 and clone._get_client().max_retries == 0
    assert clone._get_aclient().max_retries == 0
    assert llm.max_retries == 3 and llm._get_client().max_retries != 0


def test_models_without_retries_are_used_as_they_are() -> None:
    from langchain_core.language_models import FakeListChatModel

    model = FakeListChatModel(responses=["a"])
    assert without_provider_retries(model) is model
    assert without_provider_retries(len) is len


# ---------------------------------------------------------------- components
class Provider:
    """A scripted provider: fails with a timeout while ``down``; counts calls."""

    def __init__(self, case: Any) -> None:
        self.down = True
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, prompt: Any) -> str:
        with self._lock:
            self.calls += 1
        if self.down:
            raise TimeoutError("the provider timed out")
        return "yes"

    def settled(self, quiet: float = 0.2, limit: float = 5.0) -> int:
        """The call count once no call has arrived for ``quiet`` seconds.

        A failed query abandons the sync calls still running in worker threads (the
        async path awaits a sync-only model off the loop); they finish after the query
        returned, so a count taken at once can miss them.
        """
        deadline = time.monotonic() + limit
        seen = self.calls
        while time.monotonic() < deadline:
            time.sleep(quiet)
            if self.calls == seen:
                break
            seen = self.calls
        return seen


def _langchain(case: Any, provider: Provider, breaker: CircuitBreaker, **kwargs: Any):
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda

    from meclear_integrations.langchain import ClearingRetriever

    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    component = ClearingRetriever(
        retriever=RunnableLambda(lambda q: list(docs)),
        agent=RunnableLambda(provider),
        judge=lambda question, answer, **kw: 1.0,
        limits={"circuit_breaker": breaker},
        clearance={"failure": {"retry": {"max_attempts": 1}}},
        **kwargs,
    )

    from langchain_core.callbacks import BaseCallbackHandler

    events: list[dict[str, Any]] = []

    class Events(BaseCallbackHandler):
        def on_custom_event(self, name: str, data: Any, **kw: Any) -> None:
            events.append(data)

    config = {"callbacks": [Events()]}

    async def run(asynchronous: bool) -> list[Any]:
        if asynchronous:
            return await component.ainvoke(case.query, config=config)
        return component.invoke(case.query, config=config)

    run.events = events  # type: ignore[attr-defined]
    return run, lambda d: d.metadata["meclear"]


def _llama_index(case: Any, provider: Provider, breaker: CircuitBreaker, **kwargs: Any):
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.schema import NodeWithScore, TextNode

    from meclear_integrations.llama_index import MeClearPostprocessor

    class Scripted(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata()

        def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
            return CompletionResponse(text=provider(prompt))

        def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any):
            raise NotImplementedError

    nodes = [
        NodeWithScore(node=TextNode(id_=m.id, text=m.content), score=1.0) for m in case.memories
    ]
    component = MeClearPostprocessor(
        llm=Scripted(),
        judge=lambda question, answer, **kw: 1.0,
        limits={"circuit_breaker": breaker},
        clearance={"failure": {"retry": {"max_attempts": 1}}},
        **kwargs,
    )

    from llama_index.core.instrumentation import get_dispatcher

    from tests.unit_tests.llama_index.conftest import EventCollector

    collector = EventCollector()

    async def run(asynchronous: bool) -> list[Any]:
        root = get_dispatcher()
        root.add_event_handler(collector)
        try:
            if asynchronous:
                return await component.apostprocess_nodes(nodes, query_str=case.query)
            return component.postprocess_nodes(nodes, query_str=case.query)
        finally:
            root.event_handlers.remove(collector)

    run.events = collector.events  # type: ignore[attr-defined]
    return run, lambda n: n.node.metadata["meclear"]


BUILDERS = {"langchain": _langchain, "llama_index": _llama_index}


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("framework", list(BUILDERS))
async def test_breaker_skips_clearance_during_an_outage_and_closes_after(
    framework: str, asynchronous: bool
) -> None:
    case = redundant_harm_example()
    provider, clock = Provider(case), Clock(100.0)
    breaker = CircuitBreaker(failures=2, cooldown_seconds=30, clock=clock)
    run, meta = BUILDERS[framework](case, provider, breaker)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            out = await run(asynchronous)
            assert meta(out[0])["status"] == "failed"
        assert breaker.state == "open"
        spent = provider.settled()
        skipped = await run(asynchronous)
        again = await run(asynchronous)
    assert provider.settled() == spent  # no model call while open
    payloads = [getattr(e, "payload", e) for e in run.events]
    skips = [p for p in payloads if p.get("skipped") == "circuit_open" and p["phase"] == "end"]
    assert len(skips) == 2 and skips[0]["circuit"]["state"] == "open"
    assert skips[0]["status_reason"] == "circuit_open"
    assert [meta(d)["status"] for d in skipped] == ["skipped"] * len(case.memories)
    assert {meta(d)["status_reason"] for d in skipped + again} == {"circuit_open"}
    assert not any(meta(d)["cleared"] for d in skipped)
    circuit = [w for w in caught if issubclass(w.category, FailOpenWarning)]
    assert len([w for w in circuit if "circuit_open" in str(w.message)]) == 1  # once
    clock.now += 30  # the cool-down is over: the next query probes; the provider is back
    provider.down = False
    probed = await run(asynchronous)
    assert provider.calls > spent and meta(probed[0])["status"] == "complete"
    assert breaker.state == "closed"


@pytest.mark.parametrize("framework", list(BUILDERS))
def test_open_breaker_raises_when_failing_closed(framework: str) -> None:
    case = redundant_harm_example()
    provider = Provider(case)
    breaker = CircuitBreaker(failures=1, cooldown_seconds=30, clock=Clock(100.0))
    breaker.record("failure")
    run, _ = BUILDERS[framework](case, provider, breaker, on_failure="closed")
    with pytest.raises(CircuitOpenError, match="circuit breaker is open"):
        asyncio.run(run(False))
    assert provider.calls == 0


@pytest.mark.parametrize("framework", list(BUILDERS))
def test_breaker_can_be_turned_off(framework: str) -> None:
    case = redundant_harm_example()
    provider = Provider(case)
    run, meta = BUILDERS[framework](case, provider, None)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(4):
            out = asyncio.run(run(False))
            assert meta(out[0])["status"] == "failed"
