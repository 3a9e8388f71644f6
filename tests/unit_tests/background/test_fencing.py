"""Leases judged by the database's clock, and fencing tokens on every claim.

A worker whose clock runs 600 s ahead cannot take over a live job, nor dead-letter it,
nor drop the holder's ``complete``; a worker that really lost its lease has its final
write refused and logged.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest

from meclear_integrations.jobs import AuditOutcome, AuditWorker, JobStore
from tests.unit_tests.background.test_jobs import Auditor, snapshot

SKEW = 600.0


@pytest.fixture
def url(tmp_path: Path) -> str:
    return str(tmp_path / "jobs.db")


def _skewed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Python clock of this process runs SKEW seconds ahead from here on."""
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + SKEW)


def test_a_worker_whose_clock_runs_ahead_cannot_take_over_a_live_job(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    holder_store, skewed_store = JobStore(url), JobStore(url)
    job = holder_store.submit(snapshot())
    held = holder_store.claim("holder", lease_seconds=60)
    assert held is not None and held.fence == 1
    assert holder_store.heartbeat(job.job_id, "holder", lease_seconds=60, fence=held.fence)
    _skewed(monkeypatch)
    assert skewed_store.claim("skewed", lease_seconds=60) is None  # the database says: live
    skewed = AuditWorker(skewed_store, Auditor(), name="skewed", lease_seconds=60)
    assert skewed.run_once() is None
    # the holder's complete is not dropped: the job is done with its result
    assert holder_store.complete(job.job_id, ledger_run_id="run-1", fence=held.fence)
    record = holder_store.get(job.job_id)
    assert (record.state, record.ledger_run_id, record.worker) == ("done", "run-1", "holder")


def test_a_skewed_worker_does_not_delay_or_rush_a_new_job(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _skewed(monkeypatch)  # the producer's clock runs ahead when it queues the job
    store = JobStore(url)
    job = store.submit(snapshot())
    submitted = time.time() - SKEW  # the real clock: after the database's now at submit
    assert store.get(job.job_id).run_after <= submitted + 1  # not SKEW seconds late
    before = time.time() - SKEW
    claimed = store.claim("w", lease_seconds=30)
    after = time.time() - SKEW
    assert claimed is not None and claimed.job_id == job.job_id
    # the lease runs 30 s from the database's now (between before and after), not the skewed one
    assert before + 30 - 1 <= claimed.lease_until <= after + 30 + 1


def test_a_worker_that_lost_its_lease_cannot_finish_requeue_or_dead_letter_the_job(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = JobStore(url)
    job = store.submit(snapshot())
    first = store.claim("paused", lease_seconds=0.2)
    assert first is not None
    time.sleep(0.3)  # the first worker pauses past its lease (the database's clock)
    second = store.claim("survivor", lease_seconds=60)
    assert second is not None and second.job_id == job.job_id
    assert second.fence == first.fence + 1
    with caplog.at_level(logging.WARNING, logger="meclear_integrations.jobs.store"):
        assert not store.dead(job.job_id, reason="stale worker", fence=first.fence)
        assert not store.retry(job.job_id, delay=1, error="stale", fence=first.fence)
        assert not store.complete(job.job_id, ledger_run_id="stale-run", fence=first.fence)
        assert not store.heartbeat(job.job_id, "paused", lease_seconds=60, fence=first.fence)
    refused = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refused) == 3 and all(f"fence {first.fence}" in m for m in refused)
    assert "survivor" in refused[0]
    record = store.get(job.job_id)
    assert (record.state, record.worker, record.fence) == ("running", "survivor", second.fence)
    assert store.complete(job.job_id, ledger_run_id="run-2", fence=second.fence)
    record = store.get(job.job_id)
    assert (record.state, record.ledger_run_id, record.dead_reason) == ("done", "run-2", None)


def test_a_workers_dead_letter_hook_runs_only_when_the_dead_letter_is_accepted(
    url: str,
) -> None:
    store = JobStore(url)
    job = store.submit(snapshot())
    told: list[str] = []

    class Slow(Auditor):
        def audit(self, snap, *, run_id):  # type: ignore[no-untyped-def]
            time.sleep(0.3)  # outlives its lease; another worker takes the job meanwhile
            assert store.claim("other", lease_seconds=60) is not None
            return AuditOutcome("dead", "permanent")

    worker = AuditWorker(store, Slow(), name="slow", lease_seconds=0.2, heartbeat_seconds=0)
    worker.kinds._handlers["audit"].dead = lambda *a: told.append(a[1])  # type: ignore[attr-defined]
    [(_, outcome)] = worker.run_until_idle(limit=1)
    assert outcome.state == "dead"
    assert store.get(job.job_id).state == "running"  # the other worker's, not dead-lettered
    assert told == []


def test_an_old_table_gains_the_fence_column_and_keeps_its_jobs(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    con.execute(
        "CREATE TABLE meclear_audit_jobs (job_id VARCHAR(36) PRIMARY KEY, namespace VARCHAR(200) "
        "NOT NULL, flight_key VARCHAR(64) NOT NULL, state VARCHAR(12) NOT NULL, payload TEXT "
        "NOT NULL, attempts INTEGER NOT NULL, max_attempts INTEGER NOT NULL, joined INTEGER NOT "
        "NULL, run_after FLOAT NOT NULL, lease_until FLOAT, worker VARCHAR(200), last_error "
        "TEXT, dead_reason TEXT, ledger_run_id VARCHAR(64), created_at FLOAT NOT NULL, "
        "finished_at FLOAT)"
    )
    con.execute(
        "INSERT INTO meclear_audit_jobs VALUES ('j1', 'default', 'k', 'queued', ?, 0, 8, 0, 0, "
        "NULL, NULL, NULL, NULL, NULL, 0, NULL)",
        (snapshot().dumps(),),
    )
    con.commit()
    con.close()
    store = JobStore(path)
    claimed = store.claim("w", lease_seconds=60)
    assert claimed is not None and (claimed.job_id, claimed.kind, claimed.fence) == (
        "j1",
        "audit",
        1,
    )
    assert store.complete("j1", ledger_run_id="r", fence=1)


def test_a_payload_from_an_older_version_is_dead_lettered_with_its_payload(url: str) -> None:
    store = JobStore(url)
    old = json.dumps({"version": 0, "query": "Where is John?", "memories": []})
    ticket = store.enqueue("audit", old, key="k" * 64)
    auditor = Auditor()
    [(_, outcome)] = AuditWorker(store, auditor).run_until_idle()
    assert outcome.state == "dead" and auditor.seen == []
    [letter] = store.dead_letters()
    assert letter.job_id == ticket.job_id
    assert "version 0 was written by another meclear-integrations version" in str(
        letter.dead_reason
    )
    from sqlalchemy import select

    from meclear_integrations.jobs.store import jobs

    with store.engine.connect() as conn:
        kept = conn.execute(select(jobs.c.payload).where(jobs.c.job_id == ticket.job_id)).scalar()
    assert kept == old  # nothing lost: the payload stays with its dead letter
