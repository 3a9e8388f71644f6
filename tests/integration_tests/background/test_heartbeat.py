"""Lease heartbeat with a real clock: a job running longer than its lease is not taken over
while its worker lives (a killed worker's lease runs out: ``test_admission_kill.py``)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from meclear_integrations.jobs import AuditOutcome, AuditWorker, JobStore
from meclear_integrations.jobs.kinds import JobKinds


@pytest.mark.slow
@pytest.mark.parametrize("heartbeat", [0.1, 0.0])
def test_a_long_job_keeps_its_lease_while_its_worker_heartbeats(
    tmp_path: Path, heartbeat: float
) -> None:
    """With a heartbeat the job is never stolen; without one (0) it is: the test can fail."""
    store = JobStore(tmp_path / "jobs.db")  # the real clock: leases of 0.6 s
    job = store.enqueue("slow", "{}", key="s" * 64)
    release = threading.Event()
    started = threading.Event()

    def slow(payload: str, job_id: str) -> AuditOutcome:
        if started.is_set():  # the thief's run of a stolen job: nothing holds it
            return AuditOutcome("done", None, job_id)
        started.set()
        release.wait(10)
        return AuditOutcome("done", None, job_id)

    kinds = JobKinds({"slow": slow})
    alive = AuditWorker(store, kinds, name="alive", lease_seconds=0.6, heartbeat_seconds=heartbeat)
    thread = threading.Thread(target=alive.run_once)
    thread.start()
    assert started.wait(10)
    thief = AuditWorker(store, kinds, name="thief", lease_seconds=0.6)
    pause, stolen = threading.Event(), []
    for _ in range(15):  # 1.5 s: more than twice the lease
        if thief.run_once() is not None:
            stolen.append(1)
            break
        pause.wait(0.1)
    release.set()
    thread.join(10)
    record = store.get(job.job_id)
    if heartbeat:
        assert not stolen
        assert record.state == "done" and record.attempts == 1 and record.worker == "alive"
    else:
        assert stolen and record.attempts == 2 and record.worker == "thief"
