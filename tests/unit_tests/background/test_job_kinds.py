"""Job kinds on one table: audits and other kinds share leases, backoff and dead letters;
an unknown kind is dead-lettered with its reason; a live worker's heartbeat keeps its lease."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from meclear_integrations.jobs import AuditOutcome, AuditWorker, JobStore
from meclear_integrations.jobs.kinds import AUDIT, JobKinds

from .conftest import Clock
from .test_jobs import Auditor, snapshot


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> JobStore:
    return JobStore(tmp_path / "jobs.db", clock=clock, max_attempts=3)


class Echo:
    """A second kind: records what it ran, with a scripted outcome sequence."""

    def __init__(self, *outcomes: AuditOutcome | Exception) -> None:
        self.outcomes = list(outcomes)
        self.seen: list[tuple[str, str]] = []

    def __call__(self, payload: str, job_id: str) -> AuditOutcome:
        self.seen.append((payload, job_id))
        outcome = self.outcomes.pop(0) if self.outcomes else AuditOutcome("done", None, job_id)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def test_two_kinds_share_the_table_and_each_runs_its_own_handler(store: JobStore) -> None:
    audit = store.submit(snapshot())
    echo_job = store.enqueue("echo", '{"x": 1}', key="e" * 64)
    auditor, echo = Auditor(), Echo()
    kinds = JobKinds.of(auditor).register("echo", echo)
    done = AuditWorker(store, kinds).run_until_idle()
    assert {job_id for job_id, _ in done} == {audit.job_id, echo_job.job_id}
    assert auditor.seen == [("Where is John?", audit.job_id)]
    assert echo.seen == [('{"x": 1}', echo_job.job_id)]
    assert store.get(audit.job_id).kind == AUDIT and store.get(echo_job.job_id).kind == "echo"
    assert store.stats("echo") == {"queued": 0, "running": 0, "done": 1, "dead": 0}


def test_a_second_kind_backs_off_and_dead_letters_like_an_audit(
    store: JobStore, clock: Clock
) -> None:
    job = store.enqueue("echo", "{}", key="k" * 64)
    echo = Echo(ConnectionError("provider down"), ValueError("bad payload"))
    worker = AuditWorker(store, JobKinds({"echo": echo}), backoff=lambda n: 30.0)  # its kind
    ran = worker.run_once()
    assert ran is not None and ran[1].state == "retry"
    record = store.get(job.job_id)
    assert record.state == "queued" and "provider down" in str(record.last_error)
    assert worker.run_once() is None  # backing off
    clock.now += 31
    ran = worker.run_once()
    assert ran is not None and ran[1].state == "dead"
    assert "ValueError: bad payload" in str(store.get(job.job_id).dead_reason)


def test_an_unknown_kind_goes_to_the_dead_letters_with_its_reason(store: JobStore) -> None:
    job = store.enqueue("reindex", "{}", key="r" * 64)
    worker = AuditWorker(store, Auditor(), only_known_kinds=False)  # as meclear worker
    ran = worker.run_once()
    assert ran is not None and ran[1].state == "dead"
    [dead] = store.dead_letters()
    assert dead.job_id == job.job_id
    assert dead.dead_reason == "unknown job kind 'reindex' (this worker runs: audit)"


def test_in_process_pools_claim_only_their_own_kinds(store: JobStore) -> None:
    other = store.enqueue("echo", "{}", key="o" * 64)
    mine = store.submit(snapshot())
    worker = AuditWorker(store, Auditor())  # the default: its own kinds only
    assert [job_id for job_id, _ in worker.run_until_idle()] == [mine.job_id]
    assert store.get(other.job_id).state == "queued"  # left for a worker that runs it


def test_a_heartbeat_extends_only_the_holders_lease(store: JobStore, clock: Clock) -> None:
    job = store.submit(snapshot())
    held = store.claim("alive", lease_seconds=60)
    assert held is not None
    clock.now += 50
    assert store.heartbeat(job.job_id, "alive", lease_seconds=60)
    assert not store.heartbeat(job.job_id, "someone-else", lease_seconds=60)
    clock.now += 50  # past the first lease, within the extended one
    assert store.claim("thief", lease_seconds=60) is None
    clock.now += 11  # the heartbeat stopped (the worker died): the lease runs out
    stolen = store.claim("thief", lease_seconds=60)
    assert stolen is not None and stolen.job_id == job.job_id and stolen.attempts == 2
    assert not store.heartbeat(job.job_id, "alive", lease_seconds=60)  # no longer its job


def test_heartbeat_settings_are_checked(store: JobStore) -> None:
    with pytest.raises(ValueError, match="heartbeat_seconds"):
        AuditWorker(store, Auditor(), lease_seconds=1.0, heartbeat_seconds=1.0)
    with pytest.raises(ValueError, match="already has a handler"):
        JobKinds.of(Auditor(), Auditor())
    with pytest.raises(TypeError, match="runs no job kind"):
        JobKinds.of(object())


def test_a_table_made_before_job_kinds_gets_the_kind_column(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    first = JobStore(path)
    first.submit(snapshot())
    with first.engine.begin() as conn:  # rebuild the table as it was: no kind column
        conn.execute(text("CREATE TABLE old AS SELECT * FROM meclear_audit_jobs"))
        conn.execute(text("ALTER TABLE old DROP COLUMN kind"))
        conn.execute(text("DROP TABLE meclear_audit_jobs"))
        conn.execute(text("ALTER TABLE old RENAME TO meclear_audit_jobs"))
    first.close()
    reopened = JobStore(path)
    [job] = reopened.list_jobs()
    assert job.kind == AUDIT
    assert AuditWorker(reopened, Auditor()).run_once() is not None
