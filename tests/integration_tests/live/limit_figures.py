"""Model calls in flight at the provider for concurrent queries, with and without a shared
``CallLimiter``.

Six queries at once (``asyncio.gather`` on one loop, or one thread each) through ONE
component (LangChain ``ClearingRetriever`` with ``ChatOpenAI``, LlamaIndex
``MeClearPostprocessor`` with ``OpenAI``) against an OpenAI-compatible stub on 127.0.0.1
that answers from the simulated world (SIMULATED) after ``delay`` seconds and measures the
requests it is serving at once. Rerun the README's figures::

    python -m tests.integration_tests.live.limit_figures                  # limit 4, 0.1 s
    python -m tests.integration_tests.live.limit_figures --limit 2 --delay 0.3

Printed per framework and path: peak requests in flight at the stub and wall seconds
without a limiter and with ``CallLimiter(limit)``, their ratio, the requests served and the
limiter's counters (waited acquisitions, summed wait seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
from dataclasses import dataclass
from typing import Any

from meclear_integrations.runtime.limiter import CallLimiter
from meclear_integrations.simulation import redundant_harm_example
from tests.support.fault_stubs import COMPONENTS, meta
from tests.support.servers import OpenAIStub, serve


class GaugedStub:
    """Answers like ``inner`` after ``delay`` seconds; counts requests in flight and their
    peak."""

    def __init__(self, inner: OpenAIStub, delay: float) -> None:
        self.inner = inner
        self.delay = delay
        self.in_flight = 0
        self.peak = 0
        self.requests = 0
        self._lock = threading.Lock()

    def __call__(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.requests += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            time.sleep(self.delay)
            return self.inner(method, path, body)
        finally:
            with self._lock:
                self.in_flight -= 1


@dataclass
class Run:
    """One batch of concurrent queries."""

    peak: int
    """Most requests the stub served at once."""
    requests: int
    """Requests the stub served."""
    seconds: float
    """Wall seconds of the whole batch."""
    statuses: list[str]
    """Each query's status (``complete`` when its metadata has none)."""
    limiter: CallLimiter | None


def run_queries(
    framework: str,
    *,
    asynchronous: bool,
    limit: int | None,
    queries: int = 6,
    delay: float = 0.1,
    **kwargs: Any,
) -> Run:
    """``queries`` concurrent queries through one component, sharing ``CallLimiter(limit)``
    (None: no limiter), against a stub answering after ``delay`` seconds."""
    case = redundant_harm_example()
    stub = GaugedStub(OpenAIStub.for_case(case), delay)
    limiter = CallLimiter(limit) if limit is not None else None
    with serve(stub) as url:
        run = COMPONENTS[framework](url, case, limits={"limiter": limiter}, **kwargs)
        started = time.perf_counter()
        if asynchronous:

            async def batch() -> list[Any]:
                return list(await asyncio.gather(*(run(True) for _ in range(queries))))

            outs = asyncio.run(batch())
        else:
            outs = [None] * queries

            def one(i: int) -> None:
                outs[i] = asyncio.run(run(False))

            threads = [threading.Thread(target=one, args=(i,)) for i in range(queries)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        seconds = time.perf_counter() - started
    statuses = [meta(out[0]).get("status", "complete") for out in outs]
    return Run(stub.peak, stub.requests, seconds, statuses, limiter)


def main() -> None:
    """Print the table (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=4, help="the shared limiter's bound")
    parser.add_argument("--delay", type=float, default=0.1, help="seconds per stub reply")
    parser.add_argument("--queries", type=int, default=6, help="concurrent queries")
    parser.add_argument("--frameworks", nargs="+", default=list(COMPONENTS))
    args = parser.parse_args()
    print(
        f"{args.queries} concurrent queries, stub reply {args.delay} s, SIMULATED answers; "
        f"limiter CallLimiter({args.limit}) shared by the queries of one component"
    )
    print(
        "framework | path | peak in flight: none / limited | wall s: none / limited "
        "(ratio) | requests: none / limited | waited acquisitions, wait s"
    )
    for framework in args.frameworks:
        for asynchronous in (False, True):
            free = run_queries(
                framework,
                asynchronous=asynchronous,
                limit=None,
                queries=args.queries,
                delay=args.delay,
            )
            bound = run_queries(
                framework,
                asynchronous=asynchronous,
                limit=args.limit,
                queries=args.queries,
                delay=args.delay,
            )
            assert bound.limiter is not None
            stats = bound.limiter.stats()
            bad = [s for s in free.statuses + bound.statuses if s != "complete"]
            path = "async" if asynchronous else "sync"
            print(
                f"{framework} | {path} | {free.peak} / {bound.peak} | {free.seconds:.2f} / "
                f"{bound.seconds:.2f} ({bound.seconds / free.seconds:.1f}x) | {free.requests} / "
                f"{bound.requests} | {stats.waited}, {stats.wait_seconds:.1f}"
                + (f" | NOT COMPLETE: {bad}" if bad else "")
            )


if __name__ == "__main__":
    main()
