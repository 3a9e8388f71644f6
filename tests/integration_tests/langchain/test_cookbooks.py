"""Every LangChain cookbook script runs offline and shows what it promises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
OFFLINE_ENV = {
    k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH_", "LANGCHAIN_"))
}


def run(script: str) -> str:
    result = subprocess.run(
        [sys.executable, str(ROOT / "cookbook" / script)],
        capture_output=True,
        text=True,
        env=OFFLINE_ENV,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_rag_chain_swap_flips_the_answer() -> None:
    out = run("langchain_rag_chain.py")
    assert "SIMULATED" in out
    assert "plain retriever      -> January 2023" in out
    assert "ClearingRetriever    -> December 2023" in out
    assert "cleared for this query: f2, f1" in out


def test_langsmith_tracing_cookbook() -> None:
    out = run("langsmith_tracing.py")
    assert "- chain: meclear_clearance" in out and "llm: SimulatedChatModel" in out
    assert "cleared_ids ['f1', 'f2']" in out
    assert "event meclear.clearance" in out


@pytest.mark.parametrize("script", ["langchain_rag_chain.py", "langsmith_tracing.py"])
def test_cookbooks_import_in_process(script: str) -> None:
    import runpy

    result = runpy.run_path(str(ROOT / "cookbook" / script))["main"]()
    assert result
