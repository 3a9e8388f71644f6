"""Admission off the write path: acknowledged with no model call, decided in a worker."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.background import (
    AdmissionJob,
    BackgroundAdmission,
    BackgroundAdmissionEvent,
    ThreadExecutor,
)
from tests.support.stage_models import Script, StageModel

CONTEXT = "user: I'm vegetarian, please never suggest meat dishes."


class ManualExecutor:
    """Runs queued work only when told (so the test sees the request path alone)."""

    def __init__(self) -> None:
        self.queued: list[tuple[str, Callable[[], None]]] = []

    def submit(self, job_id: str, work: Callable[[], None]) -> None:
        self.queued.append((job_id, work))

    def run_all(self) -> None:
        while self.queued:
            _, work = self.queued.pop(0)
            work()


def _reject_script() -> Script:
    return Script(
        labels={"relevant": "risk", "irrelevant": "neutral", "risk": "risk"},
        preferences={"relevant": "control", "irrelevant": "tie", "risk": "control"},
    )


def test_a_background_write_is_acknowledged_without_any_model_call() -> None:
    model = StageModel()
    executor = ManualExecutor()
    stored: list[str] = []
    events: list[BackgroundAdmissionEvent] = []
    gate = BackgroundAdmission(
        ConMemAdmitter(model),
        executor=executor,
        on_store=lambda job, record: stored.append(job.candidate),
        listener=events.append,
    )
    ticket = gate.submit("User is vegetarian.", CONTEXT, candidate_id="m1")
    assert ticket.status == "pending" and ticket.model_calls == 0
    assert model.calls == []  # nothing was asked of the model on the request path
    assert gate.record(ticket.job_id).state == "pending"
    assert stored == []  # hidden: not retrievable until admitted
    assert [e.kind for e in events] == ["acknowledged"]

    executor.run_all()
    record = gate.record(ticket.job_id)
    assert record.state == "stored" and stored == ["User is vegetarian."]
    assert record.model_calls == len(model.calls) >= 14
    assert record.decision is not None and record.decision["decision"] == "store"
    assert record.decided_at is not None and record.decided_at >= record.acknowledged_at
    assert [e.kind for e in events] == ["acknowledged", "decided"]
    assert events[1].payload["model_calls"] == record.model_calls
    assert "vegetarian" not in str(events[1].payload)  # events carry no memory text


def test_hidden_rejection_never_reaches_the_store() -> None:
    executor = ManualExecutor()
    stored: list[str] = []
    rejected: list[str] = []
    gate = BackgroundAdmission(
        ConMemAdmitter(StageModel(_reject_script())),
        executor=executor,
        on_store=lambda job, record: stored.append(job.job_id),
        on_reject=lambda job, record: rejected.append(job.job_id),
    )
    ticket = gate.submit("User is strictly vegetarian.", CONTEXT)
    executor.run_all()
    record = gate.record(ticket.job_id)
    assert record.state == "rejected" and stored == [] and rejected == [ticket.job_id]
    assert record.decision is not None and record.decision["reason_type"] == "over_inference"
    assert "CMTE" in record.explanation


def test_pending_visibility_writes_at_once_marked_and_removes_on_rejection() -> None:
    executor = ManualExecutor()
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
        executor=executor,
        visibility="pending",
        on_write=write,
        on_store=admit,
        on_reject=remove,
    )
    bad = BackgroundAdmission(
        ConMemAdmitter(StageModel(_reject_script())),
        executor=executor,
        visibility="pending",
        on_write=write,
        on_store=admit,
        on_reject=remove,
    )
    t1 = good.submit("User is vegetarian.", CONTEXT)
    t2 = bad.submit("User is strictly vegetarian.", CONTEXT)
    assert store == {t1.job_id: "pending", t2.job_id: "pending"}
    assert t1.visibility == "pending"
    executor.run_all()
    assert store == {t1.job_id: "admitted"}


def test_a_failed_decision_is_recorded_and_kept_out_unless_admit() -> None:
    failing = StageModel(overrides={"judge": lambda p: RuntimeError("provider down")})
    executor = ManualExecutor()
    events: list[BackgroundAdmissionEvent] = []
    stored: list[str] = []
    gate = BackgroundAdmission(
        ConMemAdmitter(failing),
        executor=executor,
        listener=events.append,
        on_store=lambda job, record: stored.append(job.job_id),
    )
    ticket = gate.submit("User is vegetarian.", CONTEXT)
    executor.run_all()
    record = gate.record(ticket.job_id)
    assert record.state == "failed" and record.error and "judge" in record.error
    assert stored == [] and events[-1].kind == "failed"

    admit_gate = BackgroundAdmission(
        ConMemAdmitter(StageModel(overrides={"judge": lambda p: RuntimeError("down")})),
        executor=executor,
        on_error="admit",
        on_store=lambda job, record: stored.append(job.job_id),
    )
    t2 = admit_gate.submit("User is vegetarian.", CONTEXT)
    executor.run_all()
    assert admit_gate.record(t2.job_id).state == "stored" and stored == [t2.job_id]


def test_thread_executor_decides_concurrently_and_drains() -> None:
    model = StageModel(delay=0.01)
    gate = BackgroundAdmission(ConMemAdmitter(model), executor=ThreadExecutor(max_workers=2))
    tickets = [gate.submit(f"User is vegetarian ({i}).", CONTEXT) for i in range(4)]
    assert gate.drain(timeout=60)
    assert all(gate.record(t.job_id).state == "stored" for t in tickets)
    assert gate.wait(tickets[0].job_id, timeout=1).state == "stored"
    assert len(gate.records()) == 4
    gate.close()
    with pytest.raises(ValueError):
        ThreadExecutor(0)


def test_a_raising_write_callback_is_recorded_not_lost() -> None:
    executor = ManualExecutor()

    def broken(job: AdmissionJob, record: object) -> None:
        raise OSError("store offline")

    gate = BackgroundAdmission(ConMemAdmitter(StageModel()), executor=executor, on_store=broken)
    ticket = gate.submit("User is vegetarian.", CONTEXT)
    executor.run_all()
    record = gate.record(ticket.job_id)
    assert record.state == "stored" and record.error and "store offline" in record.error


def test_readme_background_example_runs(capsys) -> None:
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[3] / "docs" / "admission.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)
    code = next(b for b in blocks if "BackgroundAdmission(" in b)
    exec(compile(code, "docs/admission.md background admission", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "pending 0"
    assert lines[1] == "stored 14 ['User is allergic to shellfish.']"


def test_submit_does_not_wait_for_a_slow_model() -> None:
    import time as _time

    model = StageModel(delay=0.2)  # every call takes 0.2 s; a decision takes >= 1 s
    gate = BackgroundAdmission(ConMemAdmitter(model), executor=ThreadExecutor(max_workers=1))
    started = _time.perf_counter()
    ticket = gate.submit("User is vegetarian.", CONTEXT)
    acknowledged = _time.perf_counter() - started
    assert acknowledged < 0.2  # less than one model call
    assert gate.record(ticket.job_id).state == "pending"
    assert gate.wait(ticket.job_id, timeout=60).state == "stored"
    gate.close()
