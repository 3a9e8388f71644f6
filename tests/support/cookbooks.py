"""Run a cookbook script offline in a fresh interpreter (provider credentials removed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OFFLINE_ENV = {
    k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH_", "LANGCHAIN_"))
}


def run_cookbook(script: str) -> str:
    """The script's stdout; fails the test with its stderr when it exits non-zero."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "cookbook" / script)],
        capture_output=True,
        text=True,
        env=OFFLINE_ENV,
        cwd=ROOT,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout
