"""The LlamaIndex cookbook runs offline and shows what it promises."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "cookbook" / "llama_index_query_engine.py"
OFFLINE_ENV = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}


@pytest.mark.slow
def test_cookbook_flips_the_answer_offline() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT)],
        capture_output=True,
        text=True,
        env=OFFLINE_ENV,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "SIMULATED" in out
    assert "plain query engine           -> January 2023" in out
    assert "with MeClearPostprocessor    -> December 2023" in out
    assert "same engine, aquery          -> December 2023" in out
    assert out.count("MeClearClearanceEndEvent     cleared ['f1', 'f2'], recovered True") == 2
    assert "cleared for this query: f2, f1" in out


def test_cookbook_main_in_process() -> None:
    result = runpy.run_path(str(SCRIPT))["main"]()
    assert result == {"plain": "January 2023", "cleared": "December 2023", "async": "December 2023"}
