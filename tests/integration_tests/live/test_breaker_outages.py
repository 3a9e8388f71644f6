"""Bounded outages with real threads: a component's circuit breaker skips clearance during a
scripted provider outage (no model call while open, counted once the abandoned sync calls
of the failed queries have settled) and closes after the cool-down, LangChain and
LlamaIndex, sync and async."""

from __future__ import annotations

import warnings

import pytest

from meclear_integrations.core.failures.alerts import FailOpenWarning
from meclear_integrations.runtime.breaker import CircuitBreaker
from meclear_integrations.simulation import redundant_harm_example
from tests.support.clocks import Clock
from tests.support.outage_components import BUILDERS, Provider


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
