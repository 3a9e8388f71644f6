"""Shared fixtures: the redundant-harm case, hermetic env, a store filled with its memories."""

from __future__ import annotations

import pytest

from meclear_integrations.simulation import SimulatedCase, redundant_harm_example
from tests.support.env import clear_provider_env


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_provider_env(monkeypatch)


@pytest.fixture
def case() -> SimulatedCase:
    return redundant_harm_example()
