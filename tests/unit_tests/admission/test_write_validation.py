"""Writes are validated before any model call, in every writer; failures reach the caller."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from meclear_integrations.admission import AdmissionConfig, ConMemAdmitter
from meclear_integrations.admission.background import BackgroundAdmission
from meclear_integrations.admission.background_models import BackgroundAdmissionFailedError
from meclear_integrations.admission.errors import CandidateTypeError, InvalidCandidateError
from meclear_integrations.admission.validation import (
    DEFAULT_MAX_CANDIDATE_CHARS,
    validate_context,
)
from meclear_integrations.jobs import AuditWorker, JobStore
from tests.support.stage_models import StageModel

CONTEXT = "user: I'm vegetarian, please never suggest meat dishes."

INVALID: list[tuple[Any, str, type[Exception]]] = [
    ("", "empty", InvalidCandidateError),
    ("   \n\t ", "empty", InvalidCandidateError),
    ("x" * 1_000_000, "too_long", InvalidCandidateError),
    ("User likes\x00 tea.", "malformed", InvalidCandidateError),
    ("User likes \ud800 tea.", "malformed", InvalidCandidateError),
    (b"User is vegetarian.", "not_text", CandidateTypeError),
    (3, "not_text", CandidateTypeError),
    (None, "not_text", CandidateTypeError),
    ({"text": "User is vegetarian."}, "not_text", CandidateTypeError),
]
IDS = ["empty", "blank", "1MB", "nul", "surrogate", "bytes", "int", "none", "dict"]


@pytest.mark.parametrize(("candidate", "reason", "kind"), INVALID, ids=IDS)
def test_the_engine_refuses_an_invalid_candidate_before_any_model_call(
    candidate: Any, reason: str, kind: type[Exception]
) -> None:
    model = StageModel()
    admitter = ConMemAdmitter(model)
    with pytest.raises(kind) as caught:
        admitter.decide(candidate, CONTEXT)
    assert caught.value.field == "candidate" and caught.value.reason == reason
    with pytest.raises(kind):
        asyncio.run(admitter.adecide(candidate, CONTEXT))
    assert model.calls == []  # 0 model calls on an invalid write


def test_type_errors_are_also_type_errors_and_value_errors_value_errors() -> None:
    admitter = ConMemAdmitter(StageModel())
    with pytest.raises(TypeError):
        admitter.decide(None, CONTEXT)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="empty"):
        admitter.decide(" ", CONTEXT)


@pytest.mark.parametrize(
    ("context", "field"),
    [
        ({"role": "user", "content": "hi"}, "context"),
        (b"user: hi", "context"),
        (42, "context"),
        ([{"role": "user", "content": None}], "context[0].content"),
        ([{"role": "user"}], "context[0]"),
        ([("user", "hi"), 7], "context[1]"),
        ([{"role": 3, "content": "hi"}], "context[0].role"),
    ],
)
def test_a_malformed_context_names_the_offending_turn(context: Any, field: str) -> None:
    model = StageModel()
    with pytest.raises(CandidateTypeError) as caught:
        ConMemAdmitter(model).decide("User is vegetarian.", context)
    assert caught.value.field == field
    assert model.calls == []


def test_the_limits_are_configurable_and_inclusive() -> None:
    model = StageModel()
    admitter = ConMemAdmitter(model, AdmissionConfig(max_candidate_chars=20, max_context_chars=60))
    assert admitter.decide("a" * 20, CONTEXT).decision == "store"  # exactly the limit
    calls = len(model.calls)
    with pytest.raises(InvalidCandidateError, match="21 characters, the limit is 20"):
        admitter.decide("a" * 21, CONTEXT)
    with pytest.raises(InvalidCandidateError) as caught:
        admitter.decide("User is vegetarian.", [{"role": "user", "content": "y" * 40}] * 2)
    assert caught.value.field == "context" and caught.value.reason == "too_long"
    assert len(model.calls) == calls
    assert AdmissionConfig().max_candidate_chars == DEFAULT_MAX_CANDIDATE_CHARS
    validate_context("")  # an empty context is allowed


def test_an_error_never_carries_the_text() -> None:
    secret = "sk-live-" + "z" * 5000
    with pytest.raises(InvalidCandidateError) as caught:
        ConMemAdmitter(StageModel()).decide(secret, CONTEXT)
    assert "sk-live" not in str(caught.value)


@pytest.fixture
def jobs(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / "jobs.db", max_attempts=3)


@pytest.mark.parametrize(("candidate", "reason", "kind"), INVALID, ids=IDS)
def test_background_refuses_at_submit_and_queues_nothing(
    jobs: JobStore, candidate: Any, reason: str, kind: type[Exception]
) -> None:
    model = StageModel()
    gate = BackgroundAdmission(ConMemAdmitter(model), jobs=jobs, workers=0)
    with pytest.raises(kind) as caught:
        gate.submit(candidate, CONTEXT)
    assert caught.value.reason == reason
    assert jobs.list_jobs() == [] and gate.records() == []
    assert model.calls == []


def _run(jobs: JobStore, gate: BackgroundAdmission) -> None:
    AuditWorker(jobs, gate).run_until_idle()


def test_a_failed_background_decision_reaches_the_callback_and_the_handle(
    jobs: JobStore,
) -> None:
    broken = StageModel(overrides={"judge": lambda p: RuntimeError("judge broke")})
    failures: list[tuple[str, str]] = []
    stored: list[str] = []
    gate = BackgroundAdmission(
        ConMemAdmitter(broken),
        jobs=jobs,
        workers=0,
        on_store=lambda job, record: stored.append(job.candidate),
        on_failure=lambda job, record: failures.append((job.candidate, record.state)),
    )
    ticket = gate.submit("User is vegetarian.", CONTEXT, candidate_id="m1")
    assert not ticket.done()
    with pytest.raises(TimeoutError):
        ticket.result(timeout=0)
    _run(jobs, gate)
    assert failures == [("User is vegetarian.", "failed")]  # pushed, not found by polling
    assert ticket.done()
    with pytest.raises(BackgroundAdmissionFailedError) as caught:
        ticket.result(timeout=1)
    record = caught.value.record
    assert record.state == "failed" and "judge" in str(record.error)
    # nothing acknowledged is lost: the failed record keeps the write and can be resubmitted
    assert record.job is not None and record.job.candidate == "User is vegetarian."
    assert [r.job_id for r in gate.failed()] == [ticket.job_id]
    gate.admitter = ConMemAdmitter(StageModel())  # the provider is fixed
    again = gate.resubmit(ticket.job_id)
    assert again.job_id != ticket.job_id and again.candidate_id == "m1"
    _run(jobs, gate)
    assert again.result(timeout=1).state == "stored" and stored == ["User is vegetarian."]
    with pytest.raises(ValueError, match="not a failed job"):
        gate.resubmit(again.job_id)


def test_a_failure_admitted_anyway_is_still_reported(jobs: JobStore) -> None:
    broken = StageModel(overrides={"judge": lambda p: RuntimeError("judge broke")})
    failures: list[str] = []
    gate = BackgroundAdmission(
        ConMemAdmitter(broken),
        jobs=jobs,
        workers=0,
        on_error="admit",
        on_failure=lambda job, record: failures.append(record.state),
    )
    ticket = gate.submit("User is vegetarian.", CONTEXT)
    _run(jobs, gate)
    assert failures == ["stored"]
    with pytest.raises(BackgroundAdmissionFailedError):
        ticket.result(timeout=1)


def test_a_dead_lettered_job_reaches_on_failure(jobs: JobStore) -> None:
    model = StageModel(overrides={"judge": lambda p: ConnectionError("unreachable")})
    failures: list[str] = []
    clock = {"now": 1_000_000.0}
    store = JobStore(jobs.url, max_attempts=2, clock=lambda: clock["now"])
    gate = BackgroundAdmission(
        ConMemAdmitter(model),
        jobs=store,
        workers=0,
        on_failure=lambda job, record: failures.append(str(record.error)),
    )
    ticket = gate.submit("User is vegetarian.", CONTEXT)
    for _ in range(2):
        _run(store, gate)
        clock["now"] += 10_000
    assert len(failures) == 1 and "gave up" in failures[0]
    assert gate.record(ticket.job_id).job is not None


def test_an_invalid_job_already_queued_fails_without_a_model_call(jobs: JobStore) -> None:
    """A job queued by an older version (or by hand) is failed, never admitted."""
    import time as _time

    from meclear_integrations.admission.background import admission_key
    from meclear_integrations.admission.background_models import AdmissionJob
    from meclear_integrations.jobs.kinds import ADMISSION

    model = StageModel()
    failures: list[str] = []
    stored: list[str] = []
    gate = BackgroundAdmission(
        ConMemAdmitter(model),
        jobs=jobs,
        workers=0,
        on_error="admit",
        on_store=lambda job, record: stored.append(job.candidate),
        on_failure=lambda job, record: failures.append(str(record.error)),
    )
    job = AdmissionJob(candidate="   ", context=CONTEXT, memory_id="m", submitted_at=_time.time())
    ticket = jobs.enqueue(ADMISSION, job.dumps(), key=admission_key("m", "   ", CONTEXT))
    _run(jobs, gate)
    record = gate.record(ticket.job_id)
    assert record.state == "failed" and "invalid input" in str(record.error)
    assert model.calls == [] and stored == [] and len(failures) == 1
