"""``meclear`` output is safe to pipe and to log: no BrokenPipeError traceback when the reader
goes away (``| head``), no progress bar when stderr is no terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from meclear_integrations.cli import main

ROOT = Path(__file__).resolve().parents[2]


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


def test_a_broken_pipe_in_process_returns_1(monkeypatch, capsys) -> None:
    class Closed:
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

        def fileno(self) -> int:
            raise ValueError("no file")

    monkeypatch.setattr(sys, "stdout", Closed())
    assert main(["demo"]) == 1


def test_no_progress_bar_when_stderr_is_no_terminal(capsys) -> None:
    pytest.importorskip("tqdm")
    from meclear_bench.cli.bench_long import ProgressBar
    from meclear_integrations.cli._progress import Bar

    bar = ProgressBar(3, enabled=True)
    bar.update(1)
    bar.close()
    with Bar(3, desc="x", unit="y") as other:
        other.update(1)
    assert capsys.readouterr().err == ""  # captured stderr is no terminal
