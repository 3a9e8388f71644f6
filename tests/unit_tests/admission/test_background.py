"""Admission off the write path: acknowledged with no model call, decided in a worker."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.background import (
    AdmissionJob,
    BackgroundAdmission,
    BackgroundAdmissionEvent,
)
from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.jobs import AuditOutcome, AuditWorker, JobStore
from meclear_integrations.jobs.kinds import ADMISSION, JobKinds
from meclear_integrations.jobs.store import jobs as table
from meclear_integrations.runtime.hashing import content_hash
from tests.support.stage_models import Script, StageModel

CONTEXT = "user: I'm vegetarian, please never suggest meat dishes."


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def jobs(tmp_path: Path, clock: Clock) -> JobStore:
    """The durable job table; no worker threads: the test runs the worker itself."""
    return JobStore(tmp_path / "jobs.db", clock=clock, max_attempts=3)


def run_all(jobs: JobStore, *gates: BackgroundAdmission) -> list[tuple[str, AuditOutcome]]:
    """A worker (as ``meclear worker`` would) running every due job of the gates."""
    return AuditWorker(jobs, JobKinds.of(*gates) if len(gates) > 1 else gates[0]).run_until_idle()


def _reject_script() -> Script:
    return Script(
        labels={"relevant": "risk", "irrelevant": "neutral", "risk": "risk"},
        preferences={"relevant": "control", "irrelevant": "tie", "risk": "control"},
    )


def test_a_background_write_is_acknowledged_without_any_model_call(jobs: JobStore) -> None:
    model = StageModel()
    stored: list[str] = []
    events: list[BackgroundAdmissionEvent] = []
    gate = BackgroundAdmission(
        ConMemAdmitter(model),
        jobs=jobs,
        workers=0,
        on_store=lambda job, record: stored.append(job.candidate),
        listener=events.append,
    )
    ticket = gate.submit("User is vegetarian.", CONTEXT, candidate_id="m1")
    assert ticket.status == "pending" and ticket.model_calls == 0
    assert model.calls == []  # nothing was asked of the model on the request path
    assert gate.record(ticket.job_id).state == "pending"
    assert stored == []  # hidden: not retrievable until admitted
    assert [e.kind for e in events] == ["acknowledged"]

    run_all(jobs, gate)
    record = gate.record(ticket.job_id)
    assert record.state == "stored" and stored == ["User is vegetarian."]
    assert record.model_calls == len(model.calls) >= 14
    assert record.decision is not None and record.decision["decision"] == "store"
    assert record.decided_at is not None and record.decided_at >= record.acknowledged_at
    assert [e.kind for e in events] == ["acknowledged", "decided"]
    assert events[1].payload["model_calls"] == record.model_calls
    assert "vegetarian" not in str(events[1].payload)  # events carry no memory text


def test_hidden_rejection_never_reaches_the_store(jobs: JobStore) -> None:
    stored: list[str] = []
    rejected: list[str] = []
    gate = BackgroundAdmission(
        ConMemAdmitter(StageModel(_reject_script())),
        jobs=jobs,
        workers=0,
        on_store=lambda job, record: stored.append(job.job_id),
        on_reject=lambda job, record: rejected.append(job.job_id),
    )
    ticket = gate.submit("User is strictly vegetarian.", CONTEXT)
    run_all(jobs, gate)
    record = gate.record(ticket.job_id)
    assert record.state == "rejected" and stored == [] and rejected == [ticket.job_id]
    assert record.decision is not None and record.decision["reason_type"] == "over_inference"
    assert "CMTE" in record.explanation


def test_pending_visibility_writes_at_once_marked_and_removes_on_rejection(
    jobs: JobStore, tmp_path: Path
) -> None:
    store: dict[str, str] = {}

    def write(job: AdmissionJob, record: object) -> None:
        store[job.job_id] = "pending"

    def admit(job: AdmissionJob, record: object) -> None:
        store[job.job_id] = "admitted"

    def remove(job: AdmissionJob, record: object) -> None:
        store.pop(job.job_id)

    with pytest.raises(ValueError, match="on_write"):
        BackgroundAdmission(ConMemAdmitter(StageModel()), visibility="pending")
    good = BackgroundAdmission(
        ConMemAdmitter(StageModel()),
        jobs=jobs,
        workers=0,
        visibility="pending",
        on_write=write,
        on_store=admit,
        on_reject=remove,
    )
    other = JobStore(tmp_path / "jobs.db", namespace="bad")  # one gate per namespace
    bad = BackgroundAdmission(
        ConMemAdmitter(StageModel(_reject_script())),
        jobs=other,
        workers=0,
        visibility="pending",
        on_write=write,
        on_store=admit,
        on_reject=remove,
    )
    t1 = good.submit("User is vegetarian.", CONTEXT)
    t2 = bad.submit("User is strictly vegetarian.", CONTEXT)
    assert store == {t1.job_id: "pending", t2.job_id: "pending"}
    assert t1.visibility == "pending"
    run_all(jobs, good)
    run_all(other, bad)
    assert store == {t1.job_id: "admitted"}


def test_a_failed_decision_is_recorded_and_kept_out_unless_admit(jobs: JobStore) -> None:
    failing = StageModel(overrides={"judge": lambda p: RuntimeError("provider down")})
    events: list[BackgroundAdmissionEvent] = []
    stored: list[str] = []
    gate = BackgroundAdmission(
        ConMemAdmitter(failing),
        jobs=jobs,
        workers=0,
        listener=events.append,
        on_store=lambda job, record: stored.append(job.job_id),
    )
    ticket = gate.submit("User is vegetarian.", CONTEXT)
    [(_, outcome)] = run_all(jobs, gate)
    assert outcome.state == "done"  # a permanent failure is a decision, not a retry
    record = gate.record(ticket.job_id)
    assert record.state == "failed" and record.error and "judge" in record.error
    assert stored == [] and events[-1].kind == "failed"

    admit_gate = BackgroundAdmission(
        ConMemAdmitter(StageModel(overrides={"judge": lambda p: RuntimeError("down")})),
        jobs=jobs,
        workers=0,
        on_error="admit",
        on_store=lambda job, record: stored.append(job.job_id),
    )
    t2 = admit_gate.submit("User is vegetarian (2).", CONTEXT)
    run_all(jobs, admit_gate)
    assert admit_gate.record(t2.job_id).state == "stored" and stored == [t2.job_id]


def test_in_process_workers_decide_concurrently_and_drain(tmp_path: Path) -> None:
    model = StageModel(delay=0.01)
    gate = BackgroundAdmission(ConMemAdmitter(model), jobs=tmp_path / "jobs.db", workers=2)
    tickets = [gate.submit(f"User is vegetarian ({i}).", CONTEXT) for i in range(4)]
    assert gate.drain(timeout=60)
    assert all(gate.record(t.job_id).state == "stored" for t in tickets)
    assert gate.wait(tickets[0].job_id, timeout=1).state == "stored"
    assert len(gate.records()) == 4
    gate.close()  # joins the worker threads (they settle each job after its record)
    assert gate.jobs.stats(ADMISSION) == {"queued": 0, "running": 0, "done": 4, "dead": 0}
    with pytest.raises(ValueError):
        BackgroundAdmission(ConMemAdmitter(model), jobs=tmp_path / "j.db", workers=-1)
    with pytest.raises(ConfigurationError, match="in-memory"):
        BackgroundAdmission(ConMemAdmitter(model), jobs="sqlite://")


def test_a_raising_write_callback_retries_without_deciding_again(
    jobs: JobStore, clock: Clock
) -> None:
    model = StageModel()
    written: list[str] = []
    offline = [True]

    def store(job: AdmissionJob, record: object) -> None:
        if offline[0]:
            raise ConnectionError("store offline")
        written.append(job.memory_id)

    gate = BackgroundAdmission(ConMemAdmitter(model), jobs=jobs, workers=0, on_store=store)
    ticket = gate.submit("User is vegetarian.", CONTEXT)
    [(_, outcome)] = run_all(jobs, gate)
    assert outcome.state == "retry" and "store offline" in str(outcome.reason)
    calls = len(model.calls)
    record = gate.record(ticket.job_id)
    assert record.state == "pending" and record.decision is not None  # decided, not written
    offline[0] = False
    clock.now += 600  # past the backoff
    [(_, outcome)] = run_all(jobs, gate)
    assert outcome.state == "done" and written == [content_hash("User is vegetarian.")]
    assert len(model.calls) == calls  # the recorded decision was reused: no second bill
    assert gate.record(ticket.job_id).state == "stored"


def test_a_provider_outage_backs_off_then_decides(jobs: JobStore, clock: Clock) -> None:
    down = [True]

    def judge(prompt: str) -> object:
        return ConnectionError("provider unreachable") if down[0] else None

    model = StageModel()
    default_judge = model.handlers["judge"]
    model.handlers["judge"] = lambda p: judge(p) or default_judge(p)
    events: list[BackgroundAdmissionEvent] = []
    stored: list[str] = []
    gate = BackgroundAdmission(
        ConMemAdmitter(model),
        jobs=jobs,
        workers=0,
        listener=events.append,
        on_store=lambda job, record: stored.append(job.memory_id),
    )
    ticket = gate.submit("User is vegetarian.", CONTEXT)
    [(_, outcome)] = run_all(jobs, gate)
    assert outcome.state == "retry" and "provider unavailable" in str(outcome.reason)
    job = jobs.get(ticket.job_id)
    assert job.state == "queued" and job.run_after > clock.now  # backing off
    assert gate.record(ticket.job_id).state == "pending" and stored == []
    assert run_all(jobs, gate) == []  # not due yet
    down[0] = False
    clock.now = job.run_after + 1
    [(_, outcome)] = run_all(jobs, gate)
    assert outcome.state == "done" and gate.record(ticket.job_id).state == "stored"
    assert [e.kind for e in events] == ["acknowledged", "retrying", "decided"]
    assert jobs.get(ticket.job_id).attempts == 2


def test_an_outage_past_the_last_attempt_is_dead_lettered_and_recorded_failed(
    jobs: JobStore, clock: Clock
) -> None:
    model = StageModel(overrides={"judge": lambda p: ConnectionError("provider unreachable")})
    rejected: list[str] = []
    gate = BackgroundAdmission(
        ConMemAdmitter(model),
        jobs=jobs,
        workers=0,
        on_reject=lambda job, record: rejected.append(job.memory_id),
    )
    ticket = gate.submit("User is vegetarian.", CONTEXT)
    for _ in range(3):  # max_attempts=3
        run_all(jobs, gate)
        clock.now += 10_000
    [dead] = jobs.dead_letters()
    assert dead.job_id == ticket.job_id and "gave up after 3 attempts" in str(dead.dead_reason)
    record = gate.record(ticket.job_id)
    assert record.state == "failed" and "provider unavailable" in str(record.error)
    assert rejected == [content_hash("User is vegetarian.")]  # on_error='reject'


def test_a_job_run_twice_stores_one_memory(jobs: JobStore) -> None:
    """At-least-once delivery: a second run of a finished job writes nothing again."""
    model = StageModel()
    written: list[str] = []
    gate = BackgroundAdmission(
        ConMemAdmitter(model),
        jobs=jobs,
        workers=0,
        on_store=lambda job, record: written.append(job.memory_id),
    )
    ticket = gate.submit("User is vegetarian.", CONTEXT)
    run_all(jobs, gate)
    calls = len(model.calls)
    with jobs.engine.connect() as conn:
        stored_payload = conn.execute(
            select(table.c.payload).where(table.c.job_id == ticket.job_id)
        ).scalar_one()
    outcome = gate.job_handlers()[ADMISSION](stored_payload, ticket.job_id)  # redelivered
    assert outcome.state == "done"
    assert written == [content_hash("User is vegetarian.")]  # once, keyed by the memory's hash
    assert len(model.calls) == calls


def test_identical_writes_in_flight_share_one_job(jobs: JobStore) -> None:
    events: list[BackgroundAdmissionEvent] = []
    gate = BackgroundAdmission(
        ConMemAdmitter(StageModel()), jobs=jobs, workers=0, listener=events.append
    )
    first = gate.submit("User is vegetarian.", CONTEXT)
    again = gate.submit("User is vegetarian.", CONTEXT)
    other = gate.submit("User is vegetarian.", "user: something else entirely")
    assert first.job_id == again.job_id != other.job_id
    assert [e.kind for e in events] == ["acknowledged", "acknowledged"]
    assert len(run_all(jobs, gate)) == 2
