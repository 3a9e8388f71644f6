"""Checks shared by the progress tests of the engine and both integrations.

A run is seen as a list of ``(stage, phase, payload)`` in emission order, stage boundaries
and progress events together.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

Seen = Sequence[tuple[str, str, dict[str, Any]]]


def without_progress(seen: Seen) -> list[tuple[str, str]]:
    """The stage boundaries alone: ``(stage, phase)``."""
    return [(stage, phase) for stage, phase, _ in seen if phase != "progress"]


def batches(seen: Seen) -> dict[int, list[tuple[str, dict[str, Any]]]]:
    """Progress events by batch number: ``(stage, payload)`` in order."""
    out: dict[int, list[tuple[str, dict[str, Any]]]] = {}
    for stage, phase, payload in seen:
        if phase == "progress":
            out.setdefault(payload["batch"], []).append((stage, payload))
    return out


def check_progress(seen: Seen, *, updates: int = 10) -> dict[int, list[dict[str, Any]]]:
    """Assert that the progress events of one run are well formed; return them by batch.

    Every progress event falls inside the start/end of the stage it names; each batch
    starts at ``calls_done=0``, counts up strictly to ``calls_total`` and sends at most
    ``updates`` events after its start; batches are numbered 1, 2, ... in order;
    ``run_calls_done`` and ``elapsed_seconds`` never decrease and the run's count adds up.
    """
    open_stage: str | None = None
    run_calls, elapsed, last_batch = 0, 0.0, 0
    for stage, phase, payload in seen:
        if phase == "start":
            open_stage = stage
        elif phase in ("end", "error"):
            open_stage = None
        else:
            assert stage == open_stage, f"progress of {stage} outside its stage ({open_stage})"
            assert payload["batch"] in (last_batch, last_batch + 1)
            last_batch = payload["batch"]
            assert payload["run_calls_done"] >= run_calls
            assert payload["elapsed_seconds"] >= elapsed
            run_calls, elapsed = payload["run_calls_done"], payload["elapsed_seconds"]
            assert set(payload) >= {"calls_done", "calls_total", "run_calls_done"}
    by_batch = batches(seen)
    assert sorted(by_batch) == list(range(1, len(by_batch) + 1))
    total_before = 0
    for events in by_batch.values():
        stages = {stage for stage, _ in events}
        assert len(stages) == 1
        done = [p["calls_done"] for _, p in events]
        totals = {p["calls_total"] for _, p in events}
        assert len(totals) == 1
        (total,) = totals
        assert done[0] == 0 and done[-1] == total, done
        assert all(a < b for a, b in itertools.pairwise(done)), done
        assert len(done) - 1 <= updates
        assert events[0][1]["run_calls_done"] == total_before
        total_before += total
        assert events[-1][1]["run_calls_done"] == total_before
    return {b: [p for _, p in events] for b, events in by_batch.items()}


def wide_case(extra: int = 6):  # type: ignore[no-untyped-def]
    """The redundant-harm case with ``extra`` more background memories (K = 6 + extra)."""
    from meclear_integrations.core.memory import Memory
    from meclear_integrations.simulation import redundant_harm_example

    case = redundant_harm_example()
    background = [
        Memory(id=f"x{i}", content=f"John once mentioned hobby number {i} to a friend.")
        for i in range(extra)
    ]
    return case.model_copy(update={"memories": [*case.memories, *background]})


def has_progress_inside(by_batch: dict[int, list[dict[str, Any]]], batches: set[int]) -> bool:
    """Whether one of ``batches`` reported progress strictly between its start and its end."""
    return any(0 < p["calls_done"] < p["calls_total"] for b in batches for p in by_batch.get(b, []))
