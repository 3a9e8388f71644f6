"""Fixtures of the background-mode tests: a ledger file, a job table on it, the case."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from meclear_integrations.ledger import HarmLedger
from meclear_integrations.simulation import SimulatedCase, redundant_harm_example
from tests.support.clocks import Clock


@pytest.fixture
def case() -> SimulatedCase:
    return redundant_harm_example()


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[HarmLedger]:
    with HarmLedger(tmp_path / "ledger.db") as store:
        yield store


@pytest.fixture
def clock() -> Clock:
    return Clock()
