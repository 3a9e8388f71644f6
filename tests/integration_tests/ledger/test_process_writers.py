"""Processes opening and writing one fresh ledger at once, on SQLite and on PostgreSQL (moved from
the unit tier's test_concurrency: it spawns interpreters)."""

from __future__ import annotations

import multiprocessing

import pytest

from meclear_integrations.ledger import HarmLedger
from tests.unit_tests.ledger.test_concurrency import PER_PROCESS, PROCESSES, _write


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request: pytest.FixtureRequest, tmp_path) -> str:  # type: ignore[no-untyped-def]
    """A fresh SQLite file, and a fresh PostgreSQL database (``MECLEAR_TEST_POSTGRES_URL``)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    return request.getfixturevalue("postgres_url")


@pytest.mark.slow  # starts a subprocess
def test_processes_open_and_write_a_fresh_ledger_at_once(ledger_url: str) -> None:
    """Every process migrates on open (the lock serializes them) and then writes."""
    ctx = multiprocessing.get_context("spawn")
    workers = [
        ctx.Process(target=_write, args=(ledger_url, w, PER_PROCESS)) for w in range(PROCESSES)
    ]
    for p in workers:
        p.start()
    for p in workers:
        p.join(timeout=120)
    assert [p.exitcode for p in workers] == [0] * PROCESSES
    with HarmLedger(ledger_url, create=False) as ledger:
        runs = ledger.runs(limit=10_000)
        assert len(runs) == PROCESSES * PER_PROCESS
        assert {r.cleared_ids[0] for r in runs} == {f"f{w}" for w in range(PROCESSES)}
        assert all(len(r.memories) == 3 and len(r.candidates) >= 2 for r in runs)
