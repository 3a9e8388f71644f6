"""``meclear`` output is safe to pipe and to log: no BrokenPipeError traceback when the reader
goes away (``| head``), no progress bar when stderr is no terminal."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from meclear_integrations.cli import main

ROOT = Path(__file__).resolve().parents[2]


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
