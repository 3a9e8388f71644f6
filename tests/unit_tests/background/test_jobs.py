"""The embedded job table and its workers: single flight, leases, backoff, dead letters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meclear_integrations import Memory
from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.jobs import AuditOutcome, AuditWorker, JobStore
from meclear_integrations.jobs.snapshot import AuditSnapshot
from meclear_integrations.jobs.worker import backoff_seconds
from meclear_integrations.triggers import TriggerDecision
from tests.support.clocks import Clock

DECISION = TriggerDecision(run=True, policy="always", reason="always")


def snapshot(query: str = "Where is John?", text: str = "John is in Rome.") -> AuditSnapshot:
    memories = [Memory(id="m1", content=text), Memory(id="m2", content="John likes pasta.")]
    return AuditSnapshot.of(query, "q-" + query, memories, DECISION, reference="Rome")


class Auditor:
    def __init__(self, *outcomes: AuditOutcome | Exception) -> None:
        self.outcomes = list(outcomes)
        self.seen: list[tuple[str, str]] = []

    def audit(self, snap: AuditSnapshot, *, run_id: str) -> AuditOutcome:
        self.seen.append((snap.query, run_id))
        outcome = self.outcomes.pop(0) if self.outcomes else AuditOutcome("done", None, run_id)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> JobStore:
    return JobStore(tmp_path / "jobs.db", clock=clock, max_attempts=3)


def test_twenty_identical_questions_in_flight_share_one_job(store: JobStore) -> None:
    tickets = [store.submit(snapshot()) for _ in range(20)]
    assert len({t.job_id for t in tickets}) == 1
    assert [t.joined for t in tickets] == [False] + [True] * 19
    assert store.stats()["queued"] == 1 and store.get(tickets[0].job_id).joined == 19
    other = store.submit(snapshot(text="John is in Milan."))  # another context: its own job
    assert other.job_id != tickets[0].job_id


def test_a_finished_audit_lets_the_next_question_queue_again(store: JobStore) -> None:
    first = store.submit(snapshot())
    AuditWorker(store, Auditor()).run_until_idle()
    assert store.get(first.job_id).state == "done"
    again = store.submit(snapshot())
    assert not again.joined and again.job_id != first.job_id


def test_a_dead_workers_job_is_taken_over_after_its_lease(store: JobStore, clock: Clock) -> None:
    job = store.submit(snapshot())
    held = store.claim("dead-worker", lease_seconds=60)  # then the worker is killed
    assert held is not None and held.job_id == job.job_id
    survivor = AuditWorker(store, Auditor(), name="survivor", lease_seconds=60)
    assert survivor.run_once() is None  # the lease still holds
    clock.now += 61
    ran = survivor.run_once()
    assert ran is not None and ran[0] == job.job_id and ran[1].state == "done"
    record = store.get(job.job_id)
    assert record.state == "done" and record.attempts == 2 and record.worker == "survivor"


def test_a_job_that_kills_every_worker_ends_in_the_dead_letters(
    store: JobStore, clock: Clock
) -> None:
    job = store.submit(snapshot())
    for _ in range(3):  # max_attempts claims, each worker dies
        assert store.claim("w", lease_seconds=10) is not None
        clock.now += 11
    assert store.claim("w", lease_seconds=10) is None
    [dead] = store.dead_letters()
    assert dead.job_id == job.job_id and "lease expired 3 times" in str(dead.dead_reason)


def test_a_provider_outage_backs_off_then_succeeds(store: JobStore, clock: Clock) -> None:
    job = store.submit(snapshot())
    auditor = Auditor(AuditOutcome("retry", "ConnectionError: 503"))
    worker = AuditWorker(store, auditor, backoff=lambda attempt: 30.0 * attempt)
    [(_, outcome)] = worker.run_until_idle()
    assert outcome.state == "retry"
    record = store.get(job.job_id)
    assert record.state == "queued" and record.run_after == clock.now + 30.0
    assert "503" in str(record.last_error)
    assert worker.run_until_idle() == []  # not due yet: nothing runs before the backoff
    clock.now += 30.0
    [(_, outcome)] = worker.run_until_idle()
    assert outcome.state == "done" and store.get(job.job_id).state == "done"


def test_transient_exceptions_retry_and_permanent_ones_dead_letter(
    store: JobStore, clock: Clock
) -> None:
    first = store.submit(snapshot("a"))
    worker = AuditWorker(store, Auditor(ConnectionError("reset by peer")), backoff=lambda a: 5.0)
    worker.run_until_idle()
    assert store.get(first.job_id).state == "queued"
    second = store.submit(snapshot("b"))
    clock.now += 1  # the first is not due yet
    AuditWorker(store, Auditor(ConfigurationError("no judge")), backoff=lambda a: 5.0).run_once()
    dead = store.get(second.job_id)
    assert dead.state == "dead" and "no judge" in str(dead.dead_reason)


def test_retries_stop_at_max_attempts(store: JobStore, clock: Clock) -> None:
    job = store.submit(snapshot())
    auditor = Auditor(*[AuditOutcome("retry", "timeout")] * 5)
    worker = AuditWorker(store, auditor, backoff=lambda a: 1.0)
    for _ in range(3):
        worker.run_until_idle()
        clock.now += 1.0
    record = store.get(job.job_id)
    assert record.state == "dead" and "gave up after 3 attempts" in str(record.dead_reason)


def test_an_unreadable_or_altered_payload_goes_to_the_dead_letters(store: JobStore) -> None:
    snap = snapshot()
    data = json.loads(snap.dumps())
    data["memories"][0]["content"] = "John is in Paris."  # changed in the queue
    altered = AuditSnapshot.model_validate(data)
    store.submit(altered)
    auditor = Auditor()
    [(_, outcome)] = AuditWorker(store, auditor).run_until_idle()
    assert outcome.state == "dead" and "content hash" in str(outcome.reason)
    assert auditor.seen == []  # never cleared
    assert len(store.dead_letters()) == 1


def test_the_snapshot_round_trips_and_keys_by_question_and_context() -> None:
    snap = snapshot()
    assert AuditSnapshot.loads(snap.dumps()) == snap
    assert snap.key == snapshot().key != snapshot("Where is Ann?").key
    with pytest.raises(ValueError, match="version"):
        AuditSnapshot.loads({**json.loads(snap.dumps()), "version": 99})


def test_backoff_grows_exponentially_with_a_cap() -> None:
    delays = [backoff_seconds(n, initial=1.0, maximum=60.0) for n in range(1, 10)]
    assert delays[0] < 3.0 and delays[3] >= 8.0 and max(delays) <= 60.0


def test_meclear_worker_names_a_bad_component_spec() -> None:
    from meclear_integrations.cli.worker import load_component

    with pytest.raises(ConfigurationError, match="module:attribute"):
        load_component("no_colon_here")
    with pytest.raises(ConfigurationError, match="background"):
        load_component("meclear_integrations.jobs.snapshot:SNAPSHOT_VERSION")
