"""Wall time of the sync and the async engine paths on the same queries (a timing probe).

Run it with ``python -m meclear_bench.sync_async [--delay 0.3] [--k 6 10]``:
for each context size, a clean query (every memory helps) and a faulty one (one memory
makes the answer wrong) go through :meth:`MeClearEngine.clear` with a blocking evaluator
and through :meth:`MeClearEngine.aclear` with a coroutine evaluator, both taking
``delay`` seconds per call (a stand-in for a model call; no model, no network). It prints
the wall times, their ratio (sync / async) and the evaluator calls of each path, which
must be equal. Quote the ratio, not the absolute times.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

from meclear_integrations.core.config import ClearanceConfig
from meclear_integrations.core.engine import MeClearEngine
from meclear_integrations.core.memory import Memory

__all__ = ["Timing", "main", "measure"]

HARMFUL_ID = "m1"


@dataclass(frozen=True)
class Timing:
    """One query timed on both paths."""

    k: int
    faulty: bool
    sync_seconds: float
    async_seconds: float
    sync_calls: int
    async_calls: int

    @property
    def ratio(self) -> float:
        """Sync wall time over async wall time."""
        return self.sync_seconds / self.async_seconds


def _score(coalition: tuple[Memory, ...], faulty: bool) -> float:
    return 0.0 if faulty and any(m.id == HARMFUL_ID for m in coalition) else 1.0


def measure(k: int, faulty: bool, delay: float, config: ClearanceConfig | None = None) -> Timing:
    """Time one query of ``k`` memories on the sync and the async path.

    Args:
        k: memories in the context.
        faulty: whether one memory makes the answer wrong.
        delay: seconds per evaluator call.
        config: the engine's settings (default: ``ClearanceConfig()``).

    Returns:
        Both wall times and call counts.
    """
    memories = [Memory(id=f"m{i}", content=f"fact {i}") for i in range(k)]
    engine = MeClearEngine(config)
    calls = {"sync": 0, "async": 0}

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        calls["sync"] += 1
        time.sleep(delay)
        return _score(coalition, faulty)

    async def aevaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        calls["async"] += 1
        await asyncio.sleep(delay)
        return _score(coalition, faulty)

    started = time.perf_counter()
    engine.clear(memories, evaluate)
    sync_seconds = time.perf_counter() - started
    started = time.perf_counter()
    asyncio.run(engine.aclear(memories, aevaluate))
    async_seconds = time.perf_counter() - started
    return Timing(k, faulty, sync_seconds, async_seconds, calls["sync"], calls["async"])


def main(argv: Sequence[str] | None = None) -> None:
    """Print sync vs async wall times for clean and faulty queries.

    Args:
        argv: command-line arguments (default: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.3, help="seconds per evaluator call")
    parser.add_argument("--k", type=int, nargs="+", default=[6, 10], help="context sizes")
    args = parser.parse_args(argv)
    print("query    k  calls  sync_s  async_s  sync/async")
    for k in args.k:
        for faulty in (False, True):
            t = measure(k, faulty, args.delay)
            calls = str(t.sync_calls) if t.sync_calls == t.async_calls else "differ"
            print(
                f"{'faulty' if faulty else 'clean':6} {k:3} {calls:>6} {t.sync_seconds:7.2f} "
                f"{t.async_seconds:8.2f} {t.ratio:11.2f}"
            )


if __name__ == "__main__":
    main()
