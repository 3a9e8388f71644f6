"""The stage listener's call is one flow (``MeClearEngine._emitting``) on both paths."""

from __future__ import annotations

import asyncio
import logging
import warnings

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, StageEvent
from meclear_integrations.core.events import StageListener
from tests.support.games import CountingEvaluator, make_memories


def _value(ids: frozenset[str]) -> float:
    return 1.0 if "m0" in ids and not ids & {"m1", "m2"} else 0.0


def _stages(events: list[StageEvent]) -> list[tuple[str, str, object]]:
    """The stage events (progress left out), their payloads without the wall time."""
    return [
        (e.stage, e.phase, {k: v for k, v in e.payload.items() if k != "cost"})
        for e in events
        if e.phase != "progress"
    ]


def _clear_both(listener: StageListener) -> None:
    config = ClearanceConfig(estimator="exact")
    MeClearEngine(config, listener=listener).clear(make_memories(3), CountingEvaluator(_value))
    asyncio.run(
        MeClearEngine(config, listener=listener).aclear(make_memories(3), CountingEvaluator(_value))
    )


def test_a_sync_listener_sees_the_same_stage_events_on_both_paths() -> None:
    seen: list[StageEvent] = []
    _clear_both(seen.append)
    half = len(seen) // 2
    assert len(seen) == 2 * half
    assert _stages(seen[:half]) == _stages(seen[half:]) != []


def test_a_failing_listener_is_logged_alike_and_never_breaks_the_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def listener(event: StageEvent) -> None:
        raise RuntimeError(f"handler bug on {event.stage}/{event.phase}")

    config = ClearanceConfig(estimator="exact")
    with caplog.at_level(logging.WARNING):
        sync = MeClearEngine(config, listener=listener).clear(
            make_memories(3), CountingEvaluator(_value)
        )
    logged_sync = sorted({r.getMessage() for r in caplog.records})
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        other = asyncio.run(
            MeClearEngine(config, listener=listener).aclear(
                make_memories(3), CountingEvaluator(_value)
            )
        )
    assert sorted({r.getMessage() for r in caplog.records}) == logged_sync
    assert any("listener failed on screening/start: RuntimeError" in m for m in logged_sync)
    assert sync.cleared_ids == other.cleared_ids == ["m1", "m2"]


def test_a_coroutine_listener_is_awaited_on_the_loop_and_closed_on_the_sync_path(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[StageEvent] = []

    async def listener(event: StageEvent) -> None:
        seen.append(event)

    config = ClearanceConfig(estimator="exact")
    with caplog.at_level(logging.WARNING), warnings.catch_warnings():
        warnings.simplefilter("error")  # a coroutine never awaited would warn
        MeClearEngine(config, listener=listener).clear(make_memories(3), CountingEvaluator(_value))
    assert seen == []
    assert any("async stage listener ignored" in r.getMessage() for r in caplog.records)
    asyncio.run(
        MeClearEngine(config, listener=listener).aclear(make_memories(3), CountingEvaluator(_value))
    )
    assert _stages(seen)[0][:2] == ("screening", "start")
