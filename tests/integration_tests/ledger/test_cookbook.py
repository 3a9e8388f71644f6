"""The ledger review cookbook runs offline and acts only through the user's own code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_review_cookbook() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH_"))}
    result = subprocess.run(
        [sys.executable, str(ROOT / "cookbook" / "ledger_review.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "SIMULATED" in out
    # T = 2 baseline trials, then the ledger's candidate verified in two more (recovery
    # rate 0.3 at level 0.1: two passes in two trials)
    assert out.count("ledger_guided, 4 evaluator calls") == 2
    assert "1. f1: harmful for 3 distinct queries" in out
    assert "deleted from the vector store: ['f1', 'f2']" in out
    assert "-> December 2023" in out
