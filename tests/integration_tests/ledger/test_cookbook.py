"""The ledger review cookbook runs offline and acts only through the user's own code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
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
    # rate 0.3 at level 0.1: two passes in two trials), then the carrier search of the
    # loop's complete clearance (Loop.withhold_carriers): the kept memories alone and the
    # control, one call each
    assert out.count("ledger_guided, 9 evaluator calls") == 2  # the two rewordings
    assert out.count(": full, ") == 2  # two distinct questions, each its own clearance
    assert out.count("harmful for 2 distinct queries") == 2  # f1 and f2, not 4 (scoped)
    assert out.count(": would be retired (accepted by reviewer)") == 2  # the dry run
    retired = out.split("retired from the vector store (tombstones kept): ")[1].splitlines()[0]
    assert sorted(eval(retired)) == ["f1", "f2"]
    assert "applied again: ['already_retired', 'already_retired']" in out
    assert "('retired', 'f1', 'ops', 2)" in out  # who and the evidence runs, in the ledger
    assert "-> December 2023" in out
    assert "restored from tombstone" in out
