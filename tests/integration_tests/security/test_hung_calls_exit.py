"""A hung provider thread neither holds the caller nor keeps the interpreter from exiting: checked
in a fresh interpreter (moved from the unit tier's test_workers)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from tests.support.timing import python_seconds

_HUNG = """
import asyncio, threading, time
import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core import BudgetExceededError
from meclear_integrations.core.budget import RunBudget
from meclear_integrations.core.workers import call_gate, check_call_allowed, in_worker

never = threading.Event()

def evaluate(coalition, trial):
    never.wait(60)  # a provider call that never returns
    return 0.0

memories = [Memory(id="a", content="x"), Memory(id="b", content="y")]
engine = MeClearEngine(ClearanceConfig(budget={"max_wall_seconds": 0.5}))
started = time.monotonic()
report = {call}
print(report.status, report.failure.reason, round(time.monotonic() - started, 1), flush=True)
"""


def _run(call: str) -> tuple[str, float]:
    """The script's output and wall seconds, less what its imports cost now (same run)."""
    script = textwrap.dedent(_HUNG).replace("{call}", call)
    imports = "\n".join(line for line in script.splitlines() if line.startswith(("from", "import")))
    baseline = python_seconds(imports)
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout, time.monotonic() - started - baseline


@pytest.mark.slow  # starts a subprocess
def test_a_hung_sync_call_does_not_keep_the_process_alive() -> None:
    stdout, seconds = _run("engine.clear(memories, evaluate)")
    assert stdout.startswith("failed time_budget")
    assert seconds < 15  # past its imports: 0.5 s; today the exit waits 60 s


@pytest.mark.slow  # starts a subprocess
def test_a_hung_sync_call_under_asyncio_run_does_not_hold_it() -> None:
    stdout, seconds = _run("asyncio.run(engine.aclear(memories, evaluate))")
    assert stdout.startswith("failed time_budget")
    assert seconds < 15
