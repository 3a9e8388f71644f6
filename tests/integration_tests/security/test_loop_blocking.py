"""Sync models under async paths run on daemon workers, on the real clock: a slow sync model
never blocks the event loop and the wall deadline holds, asserted by what happened while a
call ran, not by wall time (a provider that never returns and the interpreter's exit:
``test_interpreter_exit.py``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

import pytest
from llama_index.core.schema import NodeWithScore, TextNode

from meclear_integrations import ClearanceConfig
from meclear_integrations.judges import ExactMatchJudge
from meclear_integrations.llama_index import MeClearPostprocessor
from tests.support.slow_models import FINISHED, STARTED, SyncOnlyLLM

T = TypeVar("T")


def _nodes() -> list[NodeWithScore]:
    texts = ["John was in Italy in December 2023.", "John likes pasta.", "Rome is in Italy."]
    return [NodeWithScore(node=TextNode(id_=f"n{i}", text=t)) for i, t in enumerate(texts)]


@pytest.mark.slow
async def test_a_slow_sync_llama_index_llm_does_not_block_the_loop_or_the_deadline() -> None:
    postprocessor = MeClearPostprocessor(
        llm=SyncOnlyLLM(seconds=2.0),
        judge=ExactMatchJudge(),
        reference="December 2023",
        clearance=ClearanceConfig(budget={"max_wall_seconds": 0.5}, estimator="exact"),
    )
    STARTED.clear()
    FINISHED.clear()
    clearance, ticks = await _ticking(
        postprocessor.aclear_nodes(_nodes(), "When was John in Italy?")
    )
    returned = time.monotonic()
    # today: two blocking 2 s calls on the loop, then the deadline: both calls finished
    # before the run returned, and the loop did not tick while one ran
    assert STARTED and len(FINISHED) < len(STARTED)  # the deadline did not wait for a call
    assert any(STARTED[0] < t < min([*FINISHED, returned]) for t in ticks)  # the loop ran on
    assert clearance.report is not None and clearance.report.failure.reason == "time_budget"
    assert [n.node.node_id for n in clearance.nodes] == ["n0", "n1", "n2"]


async def _ticking(run: Awaitable[T]) -> tuple[T, list[float]]:
    """``run``'s result and the times a 10 ms ticker on the same loop ran meanwhile."""
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    beat = asyncio.create_task(ticker())
    try:
        return await run, ticks
    finally:
        beat.cancel()
