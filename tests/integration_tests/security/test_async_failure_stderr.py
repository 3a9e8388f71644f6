"""Async provider failures (a closed port, HTTP 500, a truncated reply) through both components
leave nothing on stderr ("Task exception was never retrieved", "Event loop is closed"): checked
in a fresh interpreter (moved from the unit tier's test_provider_pages)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import asyncio, warnings
    warnings.simplefilter("ignore")
    from meclear_integrations.simulation import redundant_harm_example
    from tests.support.servers import serve
    from tests.support.fault_stubs import COMPONENTS, FaultStub, closed_port_url
    case = redundant_harm_example()
    fast = {
        "failure": {"retry": {"initial_backoff": 0.0, "jitter": 0.0}},
        "budget": {"max_wall_seconds": 5},
    }
    for framework in COMPONENTS:
        asyncio.run(COMPONENTS[framework](closed_port_url(), case, clearance=fast)(True))
        for mode in ("dead", "broken"):
            with serve(FaultStub(mode)) as url:
                run = COMPONENTS[framework](url, case, clearance=fast)
                for _ in range(2):
                    asyncio.run(run(True))
    import gc
    gc.collect()
    """
)


@pytest.mark.slow  # starts a subprocess
def test_async_failures_leave_nothing_on_stderr() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Task exception was never retrieved" not in done.stderr
    assert "Event loop is closed" not in done.stderr
    assert "Traceback" not in done.stderr
