"""Concurrent writers: threads, processes, and replicas opening a fresh database at once."""

from __future__ import annotations

import threading

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
