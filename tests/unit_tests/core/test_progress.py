"""Progress events: per batch, on the caller's thread / task, inside their stage."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import zlib
from typing import Any

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.events import StageEvent
from meclear_integrations.core.progress import RunProgress
from tests.support.games import make_memories
from tests.support.progress import check_progress, without_progress

HARMFUL = "m1"


def _delay(coalition: tuple[Memory, ...], trial: int) -> float:
    """A few milliseconds, different per call, so that completions spread out."""
    key = ",".join(m.id for m in coalition) + f"/{trial}"
    return 0.001 + (zlib.crc32(key.encode()) % 5) / 1000


def _score(coalition: tuple[Memory, ...]) -> float:
    return 0.0 if any(m.id == HARMFUL for m in coalition) else 1.0


class Recorder:
    """A listener that records events and the thread / task each arrived on."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, Any]]] = []
        self.threads: set[int] = set()
        self.tasks: set[Any] = set()

    def __call__(self, event: StageEvent) -> None:
        self.seen.append((event.stage, event.phase, dict(event.payload)))
        self.threads.add(threading.get_ident())
        with contextlib.suppress(RuntimeError):
            self.tasks.add(asyncio.current_task())


def _run_sync(k: int, recorder: Recorder, *, faulty: bool = True, **config: Any) -> tuple[Any, int]:
    calls = [0]
    lock = threading.Lock()

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        with lock:
            calls[0] += 1
        time.sleep(_delay(coalition, trial))
        return _score(coalition) if faulty else 1.0

    report = MeClearEngine(ClearanceConfig(**config), listener=recorder).clear(
        make_memories(k), evaluate
    )
    return report, calls[0]


async def _run_async(k: int, recorder: Recorder, **config: Any) -> tuple[Any, int]:
    calls = [0]

    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        calls[0] += 1
        await asyncio.sleep(_delay(coalition, trial))
        return _score(coalition)

    report = await MeClearEngine(ClearanceConfig(**config), listener=recorder).aclear(
        make_memories(k), evaluate
    )
    return report, calls[0]


STAGES = [
    ("screening", "start"),
    ("screening", "end"),
    ("attribution", "start"),
    ("attribution", "end"),
    ("clearance", "start"),
    ("clearance", "end"),
]


def _check_faulty_run(recorder: Recorder, report: Any, calls: int) -> None:
    assert report.cleared_ids == [HARMFUL]
    assert without_progress(recorder.seen) == STAGES  # progress opens and closes nothing
    by_batch = check_progress(recorder.seen)
    assert sum(events[-1]["calls_total"] for events in by_batch.values()) == calls
    assert report.cost.evaluator_calls == calls
    attribution = [
        events
        for stage, phase, payload in recorder.seen
        if stage == "attribution" and phase == "progress"
        for events in [by_batch[payload["batch"]]]
    ]
    # during an attribution batch, not only at its end
    assert any(0 < p["calls_done"] < p["calls_total"] for events in attribution for p in events)


@pytest.mark.parametrize("k", [10, 12])
def test_sync_progress_per_batch_on_the_callers_thread(k: int) -> None:
    recorder = Recorder()
    report, calls = _run_sync(k, recorder)
    _check_faulty_run(recorder, report, calls)
    assert recorder.threads == {threading.get_ident()}


@pytest.mark.parametrize("k", [10, 12])
async def test_async_progress_per_batch_on_the_callers_task(k: int) -> None:
    recorder = Recorder()
    report, calls = await _run_async(k, recorder)
    _check_faulty_run(recorder, report, calls)
    assert recorder.tasks == {asyncio.current_task()}


def test_a_clean_query_reports_its_baseline_batches() -> None:
    recorder = Recorder()
    report, calls = _run_sync(6, recorder, faulty=False)
    by_batch = check_progress(recorder.seen)
    assert report.early_exit
    assert {stage for stage, phase, _ in recorder.seen if phase == "progress"} == {"screening"}
    assert sum(events[-1]["calls_total"] for events in by_batch.values()) == calls


def test_a_fast_inline_evaluator_reports_progress_too() -> None:
    seen: list[tuple[str, str, dict[str, Any]]] = []

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        return _score(coalition)

    MeClearEngine(
        ClearanceConfig(), listener=lambda e: seen.append((e.stage, e.phase, e.payload))
    ).clear(make_memories(10), evaluate)
    assert check_progress(seen)


def test_a_failed_batch_stops_its_progress_and_closes_the_stage() -> None:
    seen: list[tuple[str, str, dict[str, Any]]] = []

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        if len(coalition) == 9:  # a leave-one-out coalition of the screening batch
            raise ConnectionError("provider down")  # transient: fails open
        return _score(coalition)

    report = MeClearEngine(
        ClearanceConfig(
            budget={"max_concurrency": 1},
            failure={"retry": {"initial_backoff": 0.0, "jitter": 0.0}},
        ),
        listener=lambda e: seen.append((e.stage, e.phase, e.payload)),
    ).clear(make_memories(10), evaluate)
    assert report.status == "failed"
    boundaries = without_progress(seen)
    failed_stage, phase = boundaries[-1]
    assert phase == "error" and seen[-1][1] == "error"
    progress = [(stage, p) for stage, phase, p in seen if phase == "progress"]
    last = progress[-1][1]["batch"]
    failing = [(stage, p) for stage, p in progress if p["batch"] == last]
    assert {stage for stage, _ in failing} == {failed_stage}
    assert failing[-1][1]["calls_done"] < failing[-1][1]["calls_total"]  # never complete
    check_progress([e for e in seen if e[1] != "progress" or e[2]["batch"] < last])


@pytest.mark.parametrize(
    ("total", "expected"),
    [
        (1, [0, 1]),
        (7, [0, 1, 2, 3, 4, 5, 6, 7]),
        (10, list(range(11))),
        (45, [0, 5, 10, 15, 20, 25, 30, 35, 40, 45]),
        (101, [0, 11, 22, 33, 44, 55, 66, 77, 88, 99, 101]),
    ],
)
def test_throttle_is_deterministic(total: int, expected: list[int]) -> None:
    progress = RunProgress(0.0, clock=lambda: 1.5)
    events = [progress.start(total)]
    events += [e for done in range(1, total + 1) if (e := progress.advance(done)) is not None]
    assert [e.payload["calls_done"] for e in events] == expected
    assert all(e.phase == "progress" and e.payload["elapsed_seconds"] == 1.5 for e in events)
    assert len(events) - 1 <= 10


def test_progress_follows_the_stage_started_last() -> None:
    progress = RunProgress(0.0)
    progress.observe(StageEvent(stage="attribution", phase="start"))
    progress.observe(StageEvent(stage="attribution", phase="end"))
    assert progress.start(3).stage == "attribution"
    progress.advance(3)
    progress.observe(StageEvent(stage="clearance", phase="start"))
    event = progress.start(2)
    assert event.stage == "clearance"
    assert event.payload == {
        "batch": 2,
        "calls_done": 0,
        "calls_total": 2,
        "run_calls_done": 3,
        "elapsed_seconds": event.payload["elapsed_seconds"],
    }
