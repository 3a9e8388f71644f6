"""One hostile memory cannot deny clearance to other users, on the real clock: calls slowed by
one memory's content time out (wall bound) the queries that retrieve it, but another user's
query on the same healthy provider is never ``skipped / circuit_open``; a real outage (a
provider that hangs past the wall bound) still opens the breaker for everyone."""

from __future__ import annotations

import asyncio

from tests.support.breaker_users import ask_quietly, shared_breaker_retriever
from tests.support.honest_judge import GOLD, GOLD_MEMORY


async def _agent(inputs: dict) -> str:
    if "prime below ten million" in inputs["context"]:
        await asyncio.sleep(5)  # the provider is slow only for this memory's content
    return GOLD if GOLD_MEMORY in inputs["context"] else "I don't know"


async def test_a_slow_memory_does_not_deny_clearance_to_another_user() -> None:
    retriever = shared_breaker_retriever(_agent)
    for i in range(4):  # user A's queries carry the hostile memory and time out
        out = await ask_quietly(retriever, f"A asks question {i}: when was John in Italy?")
        assert {d.metadata["meclear"].get("status") for d in out} <= {"failed", "skipped"}
    out = await ask_quietly(retriever, "B asks: when was John in Italy?")
    statuses = {d.metadata["meclear"].get("status") for d in out}
    reasons = {d.metadata["meclear"].get("status_reason") for d in out}
    assert "skipped" not in statuses and "circuit_open" not in reasons, (statuses, reasons)
    assert out[0].id == "g1"


async def test_a_provider_outage_still_opens_the_breaker_for_everyone() -> None:
    async def down(inputs: dict) -> str:
        await asyncio.sleep(5)
        return GOLD

    retriever = shared_breaker_retriever(down)
    for i in range(3):
        await ask_quietly(retriever, f"{'AB'[i % 2]} asks question {i}")
    out = await ask_quietly(retriever, "B asks: when was John in Italy?")
    assert {d.metadata["meclear"].get("status_reason") for d in out} == {"circuit_open"}
