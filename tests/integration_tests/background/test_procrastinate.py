"""Background audits on procrastinate in PostgreSQL (the ledger's database): single flight
across producers, and a worker killed mid-audit (kill -9) whose job another worker finishes
with exactly one ledger run per job.

Needs a server (``MECLEAR_TEST_POSTGRES_URL``; skipped without, failed with
``MECLEAR_REQUIRE_POSTGRES=1`` like the ledger tests).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

pytest.importorskip("procrastinate")

from sqlalchemy import create_engine, text

from .conftest import wait_for

QUESTIONS = ["Which month was John in Italy?", "When was John in Italy?", "John in Italy: when?"]


def _build(app_dir: Path, env: dict[str, str]):
    sys.path.insert(0, str(app_dir))
    old = dict(os.environ)
    os.environ.update(env)
    try:
        import bg_app  # type: ignore[import-not-found]

        return bg_app.build()
    finally:
        os.environ.clear()
        os.environ.update(old)
        sys.path.remove(str(app_dir))
        sys.modules.pop("bg_app", None)


def _status(url: str) -> dict[str, int]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY status")
        ).all()
    engine.dispose()
    return {str(s): int(n) for s, n in rows}


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="kill -9")
def test_procrastinate_single_flight_and_a_killed_worker(
    app_dir: Path, worker, postgres_url: str
) -> None:
    env = {"APP_LEDGER_URL": postgres_url, "APP_QUEUE": "procrastinate", "APP_CALL_SECONDS": "0.05"}
    component = _build(app_dir, env)
    component._queue.apply_schema()
    tickets = [component.invoke(q)[0].metadata["meclear"]["audit"] for q in QUESTIONS * 3]
    jobs = {t["job_id"] for t in tickets}
    assert len(jobs) == 3 and sum(t["joined"] for t in tickets) == 6  # single flight

    victim = worker(env)
    wait_for(lambda: _status(postgres_url).get("doing", 0) >= 1)
    os.kill(victim.pid, signal.SIGKILL)  # mid-audit: its heartbeat stops
    victim.wait(30)

    survivor = worker(env)  # retries the stalled job once the heartbeat is 2 s old
    wait_for(lambda: _status(postgres_url).get("succeeded", 0) == 3, seconds=120)
    survivor.send_signal(signal.SIGTERM)
    survivor.wait(60)

    assert _status(postgres_url) == {"succeeded": 3}  # 0 lost, none failed
    assert component._queue.dead_letters() == []
    engine = create_engine(postgres_url)
    with engine.connect() as conn:
        runs = [r[0] for r in conn.execute(text("SELECT run_id FROM meclear_runs"))]
        sizes = conn.execute(
            text(
                "SELECT count(m.run_pk) FROM meclear_runs r "
                "LEFT JOIN meclear_run_memories m ON m.run_pk = r.id GROUP BY r.id"
            )
        ).all()
    engine.dispose()
    assert sorted(runs) == sorted(f"procrastinate-{j}" for j in jobs)  # one run per job
    assert {s[0] for s in sizes} == {6}  # none torn
    component._queue.close()


def test_an_unreadable_payload_is_dead_lettered_with_its_reason(
    app_dir: Path, postgres_url: str
) -> None:
    env = {"APP_LEDGER_URL": postgres_url, "APP_QUEUE": "procrastinate", "APP_CALL_SECONDS": "0"}
    component = _build(app_dir, env)
    queue = component._queue
    queue.apply_schema()
    queue._open()
    queue._task.defer(payload='{"version": 99}')
    queue.run_worker(component, wait=False)
    [(run_id, reason)] = queue.dead_letters()
    assert run_id.startswith("procrastinate-") and "version 99" in reason
    assert _status(postgres_url) == {"failed": 1}
    queue.close()


def test_procrastinate_workers_run_apart_from_the_app(app_dir: Path, postgres_url: str) -> None:
    from meclear_integrations.core.errors import ConfigurationError
    from meclear_integrations.jobs import ProcrastinateQueue
    from meclear_integrations.langchain import ClearingRetriever

    env = {"APP_LEDGER_URL": postgres_url, "APP_QUEUE": "procrastinate", "APP_CALL_SECONDS": "0"}
    app = _build(app_dir, env)
    queue = ProcrastinateQueue(postgres_url)
    with pytest.raises((ConfigurationError, ValueError), match="meclear worker"):
        ClearingRetriever(
            retriever=app.retriever, llm=app.llm, mode="background",
            loop={"ledger": app.loop.ledger, "audit_queue": queue},
        )  # fmt: skip
    queue.close()


def test_background_admission_runs_on_the_procrastinate_queue(postgres_url: str) -> None:
    """Several replicas: admission jobs on procrastinate, decided by a worker that is not the
    app; identical writes in flight share a job; the app reads the decisions."""
    from meclear_integrations.admission import ConMemAdmitter
    from meclear_integrations.admission.background import BackgroundAdmission
    from meclear_integrations.admission.scripted import ScriptedAdmissionModel
    from meclear_integrations.jobs import ProcrastinateQueue

    context = "user: I'm allergic to shellfish, never suggest shrimp."
    stored: list[str] = []
    queue = ProcrastinateQueue(postgres_url)
    queue.apply_schema()
    app = BackgroundAdmission(ConMemAdmitter(ScriptedAdmissionModel()), jobs=queue, workers=0)
    first = app.submit("User is allergic to shellfish.", context)
    again = app.submit("User is allergic to shellfish.", context)
    other = app.submit("User is strictly vegetarian.", context)
    assert first.job_id == again.job_id != other.job_id  # single flight (queueing lock)
    assert first.job_id.startswith("procrastinate-") and first.model_calls == 0

    replica = BackgroundAdmission(  # another process's worker: same queue, its own store
        ConMemAdmitter(ScriptedAdmissionModel()),
        jobs=ProcrastinateQueue(postgres_url),
        workers=0,
        on_store=lambda job, record: stored.append(job.memory_id),
    )
    replica.jobs.run_worker(replica, wait=False)
    assert _status(postgres_url) == {"succeeded": 2}
    assert app.record(first.job_id).state == "stored"
    assert app.record(other.job_id).state == "rejected"
    assert len(stored) == 1
    queue.close()
    replica.jobs.close()
