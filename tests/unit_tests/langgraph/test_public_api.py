"""The LangGraph subpackage's public surface."""

from __future__ import annotations

import meclear_integrations.langgraph as lg


def test_all_is_exactly_the_expected_surface() -> None:
    assert lg.__all__ == ["ClearingStore"]
    assert lg.ClearingStore.__doc__
