"""The LlamaIndex agent-memory cookbook runs offline and shows what it promises (SIMULATED)."""

from __future__ import annotations

import runpy

import pytest

from tests.support.cookbooks import ROOT, run_cookbook


@pytest.mark.slow
def test_agent_memory_cookbook_offline() -> None:
    out = run_cookbook("llama_index_agent_memory.py")
    assert "SIMULATED" in out
    assert "VectorMemoryBlock            -> January 2023" in out
    assert "MeClearMemoryBlock           -> December 2023" in out
    assert "allergy kept True, small talk kept False" in out


def test_agent_memory_cookbook_in_process() -> None:
    result = runpy.run_path(str(ROOT / "cookbook" / "llama_index_agent_memory.py"))["main"]()
    assert (result["plain"], result["cleared"]) == ("January 2023", "December 2023")
    assert result["batches"] >= 1 and result["allergy"] and not result["small_talk"]
    assert result["clearance_calls"] > 0
