"""The LangGraph store cookbook runs offline and shows what it promises (SIMULATED)."""

from __future__ import annotations

import runpy

import pytest

from tests.support.cookbooks import ROOT, run_cookbook


@pytest.mark.slow
def test_langgraph_store_cookbook_offline() -> None:
    out = run_cookbook("langgraph_store.py")
    assert "SIMULATED" in out
    assert "InMemoryStore                -> January 2023" in out
    assert "ClearingStore, first ask     -> January 2023   (audit queued, +0 model calls" in out
    assert "audit done: verified harmful ['memories/john/f1', 'memories/john/f2']" in out
    assert "ClearingStore, next ask      -> December 2023" in out
    assert 'ClearingStore(mode="clear")  -> December 2023   (+' in out
    assert "admission (SCRIPTED): written ['m1'] of ['m1', 'm3']" in out


def test_langgraph_store_cookbook_in_process() -> None:
    result = runpy.run_path(str(ROOT / "cookbook" / "langgraph_store.py"))["main"]()
    assert result.pop("inline_calls") > 0
    assert result == {
        "plain": "January 2023",
        "first": "January 2023",
        "search_path_calls": 0,
        "verified": ["memories/john/f1", "memories/john/f2"],
        "second": "December 2023",
        "inline": "December 2023",
        "admitted": ["m1"],
    }
