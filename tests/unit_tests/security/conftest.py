"""Hermetic environment for the hostile-memory suite (no provider keys, no tracing)."""

from __future__ import annotations

import pytest

from tests.unit_tests.reliability.conftest import PROVIDER_ENV


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
