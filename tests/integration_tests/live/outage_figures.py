"""Per-query latency of the live components against a dead provider on 127.0.0.1.

Rerun the README's figures (LangChain ``ClearingRetriever`` with ``ChatOpenAI``, LlamaIndex
``MeClearPostprocessor`` with ``OpenAI``; default settings unless told)::

    python -m tests.integration_tests.live.outage_figures                    # refused, 500
    python -m tests.integration_tests.live.outage_figures --kinds hang --wall-seconds 5

Kinds: ``refused`` (nothing listens: connection refused), ``500`` (every request gets
HTTP 500), ``hang`` (the server accepts and never answers). Printed per framework and
path: each query's seconds and status, and the requests the stub received.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from meclear_integrations.simulation import redundant_harm_example
from tests.support.fault_stubs import COMPONENTS, FaultStub, HangingStub, closed_port_url, meta
from tests.support.servers import serve

KINDS = ("refused", "500", "hang")


@dataclass
class QueryResult:
    seconds: float
    status: str
    reason: str | None
    requests: int


@contextlib.contextmanager
def dead_provider(kind: str) -> Iterator[tuple[str, Any]]:
    """A base URL where the provider is dead in the way ``kind`` says, and its stub."""
    if kind == "refused":
        yield closed_port_url(), None
        return
    stub: Any = FaultStub("dead") if kind == "500" else HangingStub()
    with serve(stub) as url:
        try:
            yield url, stub
        finally:
            if isinstance(stub, HangingStub):
                stub.release()


def measure(
    framework: str,
    kind: str,
    *,
    asynchronous: bool,
    queries: int = 6,
    clearance: dict[str, Any] | None = None,
    pause: float = 0.0,
) -> list[QueryResult]:
    """Run ``queries`` queries through one component against a dead provider.

    ``pause``: after each query, wait until the stub has seen no new request for this
    many seconds before counting (requests of calls a failed query cancelled or abandoned
    may reach a loaded server late).
    """
    case = redundant_harm_example()
    results = []
    with dead_provider(kind) as (url, stub), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = COMPONENTS[framework](url, case, clearance=clearance or {})
        for _ in range(queries):
            started = time.perf_counter()
            out = asyncio.run(run(asynchronous))
            seconds = time.perf_counter() - started
            _settle(stub, pause)
            info = meta(out[0])
            results.append(
                QueryResult(
                    seconds,
                    info.get("status", "complete"),
                    info.get("status_reason") or (info.get("failure") or {}).get("reason"),
                    stub.requests if stub is not None else 0,
                )
            )
    return results


def _settle(stub: Any, quiet: float) -> None:
    """Wait (at most 10 s) until ``stub`` received no request for ``quiet`` seconds."""
    if stub is None or quiet <= 0:
        return
    deadline = time.monotonic() + 10.0
    last = stub.requests
    while time.monotonic() < deadline:
        time.sleep(quiet)
        if stub.requests == last:
            return
        last = stub.requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--kinds", default="refused,500", help="comma-separated: " + ",".join(KINDS)
    )
    parser.add_argument("--queries", type=int, default=6)
    parser.add_argument(
        "--wall-seconds", type=float, default=None, help="max_wall_seconds (default: live bound)"
    )
    args = parser.parse_args()
    clearance = (
        {} if args.wall_seconds is None else {"budget": {"max_wall_seconds": args.wall_seconds}}
    )
    print("framework | path | dead provider | seconds per query (status) | requests")
    for kind in args.kinds.split(","):
        for framework in COMPONENTS:
            for asynchronous in (False, True):
                results = measure(
                    framework,
                    kind,
                    asynchronous=asynchronous,
                    queries=args.queries,
                    clearance=clearance,
                )
                cells = ", ".join(
                    f"{r.seconds:.3f} ({r.status}{':' + r.reason if r.reason else ''})"
                    for r in results
                )
                path = "async" if asynchronous else "sync"
                print(f"{framework} | {path} | {kind} | {cells} | {results[-1].requests}")


if __name__ == "__main__":
    main()
