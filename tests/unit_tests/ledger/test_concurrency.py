"""Concurrent writers: threads, processes, and replicas opening a fresh database at once."""

from __future__ import annotations

import multiprocessing
import threading

import pytest

from meclear_integrations.ledger import HarmLedger
from tests.support.ledger import clear, memories

THREADS = 8
PER_THREAD = 15
PROCESSES = 4
PER_PROCESS = 12


def _write(url: str, worker: int, count: int) -> None:
    """Open the ledger (migrating it if needed) and append ``count`` decisions."""
    context = memories("g", f"f{worker}", "x")
    report = clear(context, {"g"}, {f"f{worker}"})
    with HarmLedger(url) as ledger:
        for i in range(count):
            ledger.record(report, query=f"worker {worker} query {i}", context=context)
            if i % 4 == 0:  # readers interleaved with writers
                ledger.prior_harmful(context)


def test_threads_share_one_ledger(ledger_url: str) -> None:
    context = memories("g", "f", "x")
    report = clear(context, {"g"}, {"f"})
    errors: list[BaseException] = []
    with HarmLedger(ledger_url) as ledger:
        barrier = threading.Barrier(THREADS)

        def work(worker: int) -> None:
            try:
                barrier.wait()
                for i in range(PER_THREAD):
                    ledger.record(report, query=f"t{worker}-{i}", context=context)
                    if i % 3 == 0:
                        ledger.feedback(ledger.query_id(f"t{worker}-{i}"), correct=i % 2 == 0)
                        assert ledger.prior_harmful(context) == ["f"]
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        stats = ledger.stats()
        assert stats["runs"] == THREADS * PER_THREAD
        assert stats["distinct_queries"] == THREADS * PER_THREAD
        assert sum(stats["feedback"].values()) == THREADS * len(range(0, PER_THREAD, 3))
        assert len({r.run_id for r in ledger.runs(limit=10_000)}) == THREADS * PER_THREAD
        assert all(len(r.memories) == 3 for r in ledger.runs(limit=10_000))


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
