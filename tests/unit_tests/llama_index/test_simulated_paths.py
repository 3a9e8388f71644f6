"""The simulated LLM's ``complete`` / ``acomplete`` are one flow: the ``latency`` wait
(``time.sleep`` on the sync path, ``asyncio.sleep`` on the async one), then the stand-in's
``reply`` / ``areply``, with the same completions. SIMULATED."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from meclear_integrations.llama_index import SimulatedLLM


class Recorder:
    """The stand-in model, logging which of its methods answered which prompt."""

    def __init__(self, stand_in: Any) -> None:
        self.stand_in = stand_in
        self.calls: list[tuple[str, str]] = []

    def reply(self, prompt: str) -> str:
        self.calls.append(("reply", prompt))
        return self.stand_in.reply(prompt)

    async def areply(self, prompt: str) -> str:
        self.calls.append(("areply", prompt))
        return await self.stand_in.areply(prompt)


@pytest.mark.parametrize("latency", [0.0, 0.001])
def test_both_paths_wait_and_reply_alike(case, monkeypatch, latency) -> None:
    waits: list[tuple[str, float]] = []
    sleep, asleep = time.sleep, asyncio.sleep

    def timed(seconds: float) -> None:
        waits.append(("time.sleep", seconds))
        sleep(seconds)

    async def atimed(seconds: float, *args: Any) -> Any:
        waits.append(("asyncio.sleep", seconds))
        return await asleep(seconds, *args)

    prompt = f"Question: {case.query}\nAnswer:"
    out = {}
    for mode in ("sync", "async"):
        llm = SimulatedLLM.from_case(case, latency=latency)
        recorder = Recorder(llm._stand_in)
        llm._stand_in = recorder
        waits.clear()
        with monkeypatch.context() as patch:
            patch.setattr(time, "sleep", timed)
            patch.setattr(asyncio, "sleep", atimed)
            response = (
                asyncio.run(llm.acomplete(prompt)) if mode == "async" else llm.complete(prompt)
            )
        out[mode] = (response.text, recorder.calls, [w for w in waits if w[1] == latency])
    (s_text, s_calls, s_waits), (a_text, a_calls, a_waits) = out["sync"], out["async"]
    assert s_text == a_text and s_text
    assert s_calls == [("reply", prompt)] and a_calls == [("areply", prompt)]
    assert s_waits == ([("time.sleep", latency)] if latency else [])
    assert a_waits == ([("asyncio.sleep", latency)] if latency else [])
