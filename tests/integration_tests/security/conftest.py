"""Hermetic environment for the hostile-memory suite's subprocess tests."""

from __future__ import annotations

import pytest

from tests.support.env import clear_provider_env


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_provider_env(monkeypatch)
