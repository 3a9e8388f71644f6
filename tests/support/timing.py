"""Same-run baselines for timing assertions: the machine is shared, so a bound is set from
what the same work (or an idle event loop) costs now, never from a fixed wall-clock figure."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


async def ticking(run: Awaitable[T], period: float = 0.01) -> tuple[T, float, float]:
    """``run``'s result, its wall seconds and the longest gap of a ``period`` ticker meanwhile."""
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(period)

    beat = asyncio.create_task(ticker())
    started = time.monotonic()
    try:
        result = await run
    finally:
        beat.cancel()
    elapsed = time.monotonic() - started
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    return result, elapsed, max(gaps, default=0.0)


async def idle_loop(seconds: float) -> tuple[float, float]:
    """How late an idle ``asyncio.sleep(seconds)`` ends and the longest ticker gap meanwhile
    (the loop's scheduling noise on this machine now)."""
    _, elapsed, gap = await ticking(asyncio.sleep(seconds))
    return elapsed - seconds, gap


def python_seconds(code: str, cwd: Path | None = None, timeout: float = 300) -> float:
    """Wall seconds of ``python -c code`` (e.g. the imports a subprocess test pays for)."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=cwd
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return time.monotonic() - started
