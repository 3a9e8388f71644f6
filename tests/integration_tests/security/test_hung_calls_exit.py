"""A hung provider thread neither holds the caller nor keeps the interpreter from exiting: checked
in a fresh interpreter (moved from the unit tier's test_workers)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

_HUNG = """
import asyncio, threading, time
import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core import BudgetExceededError
from meclear_integrations.core.budget import RunBudget
from meclear_integrations.core.concurrency.workers import call_gate, check_call_allowed, in_worker

never = threading.Event()

def evaluate(coalition, trial):
    never.wait(60)  # a provider call that never returns
    print("a hung provider call returned", flush=True)  # only if something waited it out
    return 0.0

memories = [Memory(id="a", content="x"), Memory(id="b", content="y")]
engine = MeClearEngine(ClearanceConfig(budget={"max_wall_seconds": 0.5}))
started = time.monotonic()
report = {call}
print(report.status, report.failure.reason, round(time.monotonic() - started, 1), flush=True)
"""


def _run(call: str) -> str:
    """The script's output (it ran to its end and exited)."""
    script = textwrap.dedent(_HUNG).replace("{call}", call)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.slow  # starts a subprocess
def test_a_hung_sync_call_does_not_keep_the_process_alive() -> None:
    stdout = _run("engine.clear(memories, evaluate)")
    assert stdout.startswith("failed time_budget")
    assert "returned" not in stdout  # the exit did not wait for the hung call


@pytest.mark.slow  # starts a subprocess
def test_a_hung_sync_call_under_asyncio_run_does_not_hold_it() -> None:
    stdout = _run("asyncio.run(engine.aclear(memories, evaluate))")
    assert stdout.startswith("failed time_budget")
    assert "returned" not in stdout
