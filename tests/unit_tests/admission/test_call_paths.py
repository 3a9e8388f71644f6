"""``CallRunner.run`` and ``arun`` take the same steps (one flow, ``core.concurrency.step_driver``).

On the same scripted replies (SIMULATED: no model) both paths send the same requests in the
same formats (the format ladder), the same retry prompts (parse feedback), wait the same
backoff, hold the limiter once per attempt, and end in the same value or failure.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from meclear_integrations.admission import AdmissionConfig
from meclear_integrations.admission.calls import CallMeter, CallRunner, ModelCall
from meclear_integrations.admission.outputs import TieBreakOutput
from meclear_integrations.runtime.limiter import CallLimiter

GOOD = json.dumps({"decision": "store", "explanation": "scripted"})
Reply = Callable[[str], Any]


class Scripted:
    """Replies in order (a reply that is an exception is raised); logs (method, prompt)."""

    def __init__(self, replies: list[Any], *, structured: bool = False) -> None:
        self.replies = list(replies)
        self.log: list[tuple[str, str]] = []
        if structured:
            self.complete_json = self._json
            self.acomplete_json = self._ajson

    def _next(self, method: str, prompt: str) -> Any:
        self.log.append((method, prompt))
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def complete(self, prompt: str) -> Any:
        return self._next("text", prompt)

    async def acomplete(self, prompt: str) -> Any:
        return self._next("text", prompt)

    def _json(self, prompt: str, schema: Any) -> Any:
        return self._next("json_schema", prompt)

    async def _ajson(self, prompt: str, schema: Any) -> Any:
        return self._next("json_schema", prompt)


SCENARIOS: dict[str, tuple[list[Any], dict[str, Any]]] = {
    "parses": ([GOOD], {}),
    "feedback_then_parses": (["not json", '{"decision": "maybe"}', GOOD], {}),
    "never_parses": (["nope"] * 3, {}),
    "model_raises": ([TimeoutError("slow provider")] * 3, {}),
    "raises_then_parses": ([RuntimeError("sk-secret broke"), GOOD], {}),
    "prose_to_a_schema_request": (["Sure! I would store it.", GOOD], {"structured": True}),
    "schema_then_parses": (
        [{"decision": "DO_NOT_STORE", "explanation": "x"}],
        {"structured": True},
    ),
}


def _run(mode: str, model: Scripted, config: AdmissionConfig, limiter: CallLimiter) -> Any:
    meter = CallMeter()
    runner = CallRunner(model, config, meter, limiter=limiter)  # type: ignore[arg-type]
    call = ModelCall(stage="tie_break", prompt="decide", schema=TieBreakOutput)
    result = runner.run(call) if mode == "sync" else asyncio.run(runner.arun(call))
    return result, meter


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_both_paths_send_the_same_requests_and_end_alike(scenario: str, monkeypatch: Any) -> None:
    replies, options = SCENARIOS[scenario]
    waits: list[tuple[str, float]] = []
    real_sleep = asyncio.sleep
    monkeypatch.setattr(time, "sleep", lambda s: waits.append(("sync", s)))

    async def fake_asleep(seconds: float) -> None:
        waits.append(("async", seconds))
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", fake_asleep)
    config = AdmissionConfig(max_parse_attempts=3, retry_backoff_seconds=0.5)
    seen = {}
    for mode in ("sync", "async"):
        model = Scripted(replies, **options)
        limiter = CallLimiter(1)
        result, meter = _run(mode, model, config, limiter)
        slept = [s for m, s in waits if m == mode]
        seen[mode] = (result, model.log, meter.cost(0.0).model_dump(exclude={"latency_seconds"}))
        seen[mode] += (slept, limiter.stats().acquisitions)
    assert seen["sync"] == seen["async"]
    result, _log, cost, slept, acquired = seen["sync"]
    assert acquired == cost["model_calls"] == len(slept) + 1  # a slot per attempt, a wait between
    assert slept == [0.5, 1.0][: len(slept)]  # tenacity's exponential backoff
    if not result.ok:
        assert result.failure.attempts == 3 and "sk-secret" not in result.failure.error
