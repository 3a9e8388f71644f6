"""Game values and a latency evaluator whose calls' start order counts model round trips."""

from __future__ import annotations

import asyncio

from meclear_integrations import Memory


def redundant(ids: frozenset[str]) -> float:
    """m0 supports the answer; m1 and m2 each override it."""
    return 1.0 if "m0" in ids and not ids & {"m1", "m2"} else 0.0


class WaveClock:
    """A latency evaluator: every call sleeps ``delay``; the calls' start order reveals the
    number of model round trips. A call's wave is the number of calls that had completed
    when it started: the calls of one batch all start before any of them completes, so a
    stalled scheduler (a loaded machine) cannot split or merge waves unless it stalls for a
    full ``delay``."""

    def __init__(self, value, delay: float = 0.03) -> None:
        self.value = value
        self.delay = delay
        self.done_at_start: list[int] = []
        self.done = 0

    async def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        self.done_at_start.append(self.done)
        await asyncio.sleep(self.delay)
        self.done += 1
        return self.value(frozenset(m.id for m in coalition))

    def waves(self) -> int:
        return len(set(self.done_at_start))


def joint(ids: frozenset[str]) -> float:
    """m0 supports the answer; m1 and m2 override it only together."""
    return 1.0 if "m0" in ids and not {"m1", "m2"} <= ids else 0.0
