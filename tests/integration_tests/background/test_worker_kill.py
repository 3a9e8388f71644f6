"""A worker killed mid-audit (kill -9) loses no job: another finishes it, and the ledger
holds exactly one complete run per job (at-least-once delivery, idempotent writes)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from .conftest import wait_for

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="kill -9")

QUESTIONS = ["Which month was John in Italy?", "When was John in Italy?", "John in Italy: when?"]


def _enqueue(app_dir: Path, env: dict[str, str]) -> list[str]:
    sys.path.insert(0, str(app_dir))
    old = dict(os.environ)
    os.environ.update(env)
    try:
        import bg_app  # type: ignore[import-not-found]

        component = bg_app.build()
        tickets = []
        for question in QUESTIONS:
            out = component.invoke(question)
            tickets.append(out[0].metadata["meclear"]["audit"]["job_id"])
        return tickets
    finally:
        os.environ.clear()
        os.environ.update(old)
        sys.path.remove(str(app_dir))
        sys.modules.pop("bg_app", None)


def _ledger_rows(url: str) -> tuple[list[str], dict[str, int]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        runs = [r[0] for r in conn.execute(text("SELECT run_id FROM meclear_runs"))]
        members = dict(
            conn.execute(
                text(
                    "SELECT r.run_id, count(m.run_pk) FROM meclear_runs r "
                    "LEFT JOIN meclear_run_memories m ON m.run_pk = r.id GROUP BY r.run_id"
                )
            ).all()
        )
    engine.dispose()
    return runs, members


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_killed_worker_loses_no_job_and_writes_no_duplicate(
    app_dir: Path, worker, backend: str, request: pytest.FixtureRequest
) -> None:
    """On the embedded job table beside a SQLite ledger, and beside a PostgreSQL one."""
    if backend == "sqlite":
        url = f"sqlite:///{app_dir / 'ledger.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    env = {"APP_LEDGER_URL": url, "APP_CALL_SECONDS": "0.05"}
    jobs = _enqueue(app_dir, env)
    assert len(set(jobs)) == 3

    from meclear_integrations.jobs import JobStore

    store = JobStore(url)
    victim = worker(env, "--lease-seconds", "2")
    wait_for(lambda: store.stats()["running"] == 1)
    os.kill(victim.pid, signal.SIGKILL)  # mid-audit
    victim.wait(30)
    [held] = store.list_jobs("running")
    assert held.attempts == 1

    survivor = worker(env, "--lease-seconds", "2")  # takes over once the lease runs out
    wait_for(lambda: store.stats()["done"] == 3, seconds=120)
    survivor.send_signal(signal.SIGTERM)
    survivor.wait(60)

    assert store.stats() == {"queued": 0, "running": 0, "done": 3, "dead": 0}  # 0 lost
    assert store.get(held.job_id).attempts == 2
    runs, members = _ledger_rows(url)
    assert sorted(runs) == sorted(jobs)  # one run per job, under the job id
    assert set(members.values()) == {6}  # every run whole: its six memories
