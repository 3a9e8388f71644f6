"""The agent-middleware cookbook runs offline and shows what it promises (SIMULATED)."""

from __future__ import annotations

import runpy

import pytest

from tests.support.cookbooks import ROOT, run_cookbook


@pytest.mark.slow
def test_agent_middleware_cookbook_offline() -> None:
    out = run_cookbook("agent_middleware.py")
    assert "SIMULATED" in out
    assert "create_agent                 -> January 2023" in out
    assert "with MeClearMiddleware       -> December 2023   (+" in out
    assert "same agent, streamed         -> December 2023" in out
    assert "same agent, astream_events   -> December 2023" in out
    assert "clearance run sits under node: tools" in out


def test_agent_middleware_cookbook_in_process() -> None:
    result = runpy.run_path(str(ROOT / "cookbook" / "agent_middleware.py"))["main"]()
    assert result["plain"] == "January 2023"
    assert result["cleared"] == result["streamed"] == result["async"] == "December 2023"
    assert sorted(result["cleared_ids"]) == ["f1", "f2"]
    assert sorted(result["kept"]) == ["b1", "b2", "b3", "g1"]
    assert result["parent"] == "tools"
    assert result["clearance_calls"] > 0
