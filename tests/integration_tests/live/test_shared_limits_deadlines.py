"""Shared limits on the real clock: a query waiting for a slot of a shared limiter that
another caller holds ends at its wall bound, LangChain and LlamaIndex, sync and async,
and its abandoned waiters leave the limiter."""

from __future__ import annotations

import asyncio

import pytest

from meclear_integrations.runtime.limiter import CallLimiter
from tests.support.gauged_components import COMPONENTS, FAST, clearance_meta
from tests.support.limits import Gauge, Holder, wait_until


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("framework", list(COMPONENTS))
def test_a_query_waiting_for_a_slot_ends_at_its_wall_bound(
    framework: str, asynchronous: bool
) -> None:
    limiter = CallLimiter(1)
    holder = Holder(limiter)  # another caller holds the only slot
    try:
        run = COMPONENTS[framework](
            Gauge(),
            limits={"limiter": limiter, "circuit_breaker": None},
            clearance={**FAST, "budget": {"max_wall_seconds": 0.5}},
        )
        with pytest.warns(Warning):  # the FailOpenWarning of the time budget
            out = asyncio.run(run(asynchronous))
        held_throughout = holder.holding  # the query ended without getting the slot
    finally:
        holder.release()
    meta = clearance_meta(out[0])
    assert meta["status"] == "failed" and meta["failure"]["reason"] == "time_budget"
    assert held_throughout
    # abandoned waiters of the sync path notice the run's end
    wait_until(lambda: limiter.stats().waiting == 0 and limiter.stats().in_flight == 0)
    stats = limiter.stats()
    assert (stats.in_flight, stats.waiting) == (0, 0) and stats.gave_up >= 1
