"""Wall time of one query through each integration, sync against async, on a slow provider.

One clean query (the redundant-harm case without its two stale memories) and one faulty
query (the whole case) through LangChain ``ClearingRetriever`` with ``ChatOpenAI`` and
LlamaIndex ``MeClearPostprocessor`` with ``OpenAI``, against an OpenAI-compatible stub on
127.0.0.1 that answers from the simulated world (SIMULATED) after ``delay`` seconds. The
same query runs through ``invoke`` / ``postprocess_nodes`` and through ``ainvoke`` /
``apostprocess_nodes``; a ratio near 1 means the sync path runs independent calls as
concurrently as the async one. ``--unbounded`` also runs every query with
``max_wall_seconds=None`` (no live wall bound, so the engine chooses inline or threads by
itself)::

    python -m tests.integration_tests.live.sync_async_figures --delay 0.3 --unbounded

Printed per framework and query: seconds and requests on each path, the clearance status
and the sync / async ratio (measured in one run: the machine's load moves the seconds, not
the ratio).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from meclear_integrations import ClearanceConfig
from meclear_integrations.simulation import redundant_harm_example
from tests.support.fault_stubs import COMPONENTS, FaultStub, meta
from tests.support.servers import OpenAIStub, serve


def clean_and_faulty_cases() -> dict[str, Any]:
    faulty = redundant_harm_example()
    clean = faulty.model_copy(
        update={"memories": [m for m in faulty.memories if m.id not in ("f1", "f2")]}
    )
    return {"clean": clean, "faulty": faulty}


def _timed(framework: str, case: Any, asynchronous: bool, delay: float, **kwargs: Any):
    stub = FaultStub("slow", ok=OpenAIStub.for_case(case), delay=delay)
    with serve(stub) as url:
        run = COMPONENTS[framework](url, case, **kwargs)
        started = time.perf_counter()
        out = asyncio.run(run(asynchronous))
        seconds = time.perf_counter() - started
    return seconds, stub.requests, meta(out[0]).get("status", "complete")


def main(argv: list[str] | None = None) -> None:
    """Print the sync / async wall-time table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.3, help="seconds per request")
    parser.add_argument(
        "--unbounded", action="store_true", help="also run with max_wall_seconds=None"
    )
    args = parser.parse_args(argv)
    settings: list[tuple[str, dict[str, Any]]] = [("live bound", {})]
    if args.unbounded:
        settings.append(
            (
                "unbounded",
                {"clearance": ClearanceConfig(budget={"max_wall_seconds": None})},
            )
        )
    print("framework   wall bound  query   sync s (req)      async s (req)     sync/async")
    for framework in COMPONENTS:
        for label, kwargs in settings:
            for name, case in clean_and_faulty_cases().items():
                s = _timed(framework, case, False, args.delay, **kwargs)
                a = _timed(framework, case, True, args.delay, **kwargs)
                print(
                    f"{framework:11} {label:11} {name:7} {s[0]:6.2f} ({s[1]:3d}, {s[2]})"
                    f"  {a[0]:6.2f} ({a[1]:3d}, {a[2]})  {s[0] / a[0]:.2f}"
                )


if __name__ == "__main__":
    main()
