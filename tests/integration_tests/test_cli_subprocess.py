"""``meclear`` as a command in a fresh interpreter: its help, and output that is safe to pipe (no
BrokenPipeError traceback when the reader goes away, ``| head``); moved from the unit tier's
test_cli_demo and test_cli_pipes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # starts a subprocess
def test_help_lists_commands() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "meclear_integrations.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "demo" in result.stdout


def _ledger(path: Path) -> None:
    from meclear_integrations.ledger import HarmLedger
    from tests.support.ledger import clear, memories

    with HarmLedger(path, store_text=True) as ledger:
        for i in range(6):
            context = memories("g", f"stale{i % 3}", "bg")
            ledger.record(clear(context, {"g"}, {f"stale{i % 3}"}), query=f"q{i}", context=context)


@pytest.mark.slow  # starts a subprocess
@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_a_closed_pipe_ends_quietly(tmp_path: Path, fmt: str) -> None:
    pytest.importorskip("sqlalchemy")
    path = tmp_path / "ledger.db"
    _ledger(path)
    command = [sys.executable, "-m", "meclear_integrations.cli", "ledger", "--ledger", str(path)]
    command += ["review", "--min-queries", "1", "--format", fmt]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # the reader is gone before the first line is written
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) in (0, 1)
    assert "BrokenPipeError" not in err and "Traceback" not in err
