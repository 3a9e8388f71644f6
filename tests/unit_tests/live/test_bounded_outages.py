"""Bounded outages, hermetic: the circuit breaker's state machine, what a clearance tells
it, the live wall bound, the retry-free model copies, and a component whose provider
fails (scripted), LangChain and LlamaIndex. (The breaker skipping and closing around an
outage, counted once abandoned calls settle: ``live/test_breaker_outages.py`` of the
integration tier.)"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest

from meclear_integrations.core.config import ClearanceConfig
from meclear_integrations.core.errors import BudgetExceededError
from meclear_integrations.core.failures.kind import CircuitOpenError
from meclear_integrations.guard.live_bounds import (
    LIVE_MAX_WALL_SECONDS,
    live_config,
    provider_outcome,
)
from meclear_integrations.runtime.breaker import CircuitBreaker
from meclear_integrations.runtime.loop_clients import without_provider_retries
from meclear_integrations.simulation import redundant_harm_example
from tests.support.clocks import Clock
from tests.support.outage_components import BUILDERS, Provider


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
