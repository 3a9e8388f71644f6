"""The console cookbook prints the clearance span tree (a fresh interpreter; moved from the unit
tier's test_volume)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from meclear_integrations.telemetry import CAPTURE_CONTENT_ENV

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow  # starts a subprocess
def test_console_cookbook() -> None:
    env = {k: v for k, v in os.environ.items() if k != CAPTURE_CONTENT_ENV}
    result = subprocess.run(
        [sys.executable, str(ROOT / "cookbook" / "otel_console.py"), "--detail", "evaluations"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "SIMULATED" in out and "kept for this query: g1, b1, b2, b3" in out
    assert "meclear.clearance" in out and "meclear.judge" in out
    assert "gen_ai.evaluation.score.label=correct" in out
    assert "meclear.cleared_ids=['f1', 'f2']" in out
