"""Background admission on the durable job table, across processes: a worker killed mid-
decision (kill -9) leaves a job another worker finishes, and each admitted memory is stored
exactly once; ``meclear worker`` runs audit and admission jobs from one table."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from .conftest import REPO, wait_for

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="kill -9")

ADM_APP = textwrap.dedent(
    '''
    """A background admission app: a slow scripted model (NOT an LLM) and a SQLite store."""
    import os
    import sqlite3
    import time

    from meclear_integrations.admission import ConMemAdmitter
    from meclear_integrations.admission.background import BackgroundAdmission
    from meclear_integrations.admission.scripted import ScriptedAdmissionModel


    class SlowModel(ScriptedAdmissionModel):
        def complete(self, prompt):
            time.sleep(float(os.environ.get("APP_CALL_SECONDS", "0.05")))
            return super().complete(prompt)


    def store(job, record):
        """The application's memory store: written by the memory's id (an upsert)."""
        with sqlite3.connect(os.environ["APP_STORE"]) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS memories (memory_id TEXT, content TEXT)")
            conn.execute("CREATE TABLE IF NOT EXISTS writes (memory_id TEXT)")
            conn.execute("DELETE FROM memories WHERE memory_id = ?", (job.memory_id,))
            conn.execute("INSERT INTO memories VALUES (?, ?)", (job.memory_id, job.candidate))
            conn.execute("INSERT INTO writes VALUES (?)", (job.memory_id,))


    def build():
        return BackgroundAdmission(
            ConMemAdmitter(SlowModel()),
            jobs=os.environ["APP_LEDGER_URL"],
            workers=0,
            lease_seconds=2.0,
            on_store=store,
        )
    '''
)

CANDIDATES = [
    ("User is allergic to shellfish.", "user: I'm allergic to shellfish, never suggest shrimp."),
    ("User is vegetarian.", "user: I'm vegetarian, please never suggest meat dishes."),
    ("User lives in Lyon.", "user: I moved to Lyon last spring."),
]


def _load(app_dir: Path, env: dict[str, str], module: str):
    sys.path.insert(0, str(app_dir))
    old = dict(os.environ)
    os.environ.update(env)
    try:
        imported = __import__(module)
        return imported.build()
    finally:
        os.environ.clear()
        os.environ.update(old)
        sys.path.remove(str(app_dir))
        sys.modules.pop(module, None)


def _worker(app_dir: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    full = {**os.environ, **env, "PYTHONPATH": os.pathsep.join([str(app_dir), str(REPO)])}
    return subprocess.Popen(
        [sys.executable, "-m", "meclear_integrations.cli", "worker", *args],
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_a_killed_admission_worker_loses_no_job_and_stores_no_duplicate(app_dir: Path) -> None:
    (app_dir / "adm_app.py").write_text(ADM_APP, encoding="utf-8")
    url = f"sqlite:///{app_dir / 'ledger.db'}"
    env = {"APP_LEDGER_URL": url, "APP_STORE": str(app_dir / "store.db")}
    env["APP_CALL_SECONDS"] = "0.1"  # about 1.4 s per decision: the kill lands mid-decision
    gate = _load(app_dir, env, "adm_app")
    tickets = [gate.submit(c, ctx) for c, ctx in CANDIDATES]
    assert all(t.status == "pending" and t.model_calls == 0 for t in tickets)
    jobs = gate.jobs
    started: list[subprocess.Popen[str]] = []
    try:
        victim = _worker(app_dir, env, "--component", "adm_app:build", "--lease-seconds", "2")
        started.append(victim)
        wait_for(lambda: jobs.stats()["running"] == 1)
        os.kill(victim.pid, signal.SIGKILL)  # mid-decision: its heartbeat dies with it
        victim.wait(30)
        [held] = jobs.list_jobs("running")
        assert held.attempts == 1 and held.kind == "admission"

        survivor = _worker(app_dir, env, "--component", "adm_app:build", "--lease-seconds", "2")
        started.append(survivor)
        wait_for(lambda: jobs.stats()["done"] == 3, seconds=120)
        survivor.send_signal(signal.SIGTERM)
        survivor.wait(60)
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.kill()
            proc.wait(30)

    assert jobs.stats() == {"queued": 0, "running": 0, "done": 3, "dead": 0}  # 0 lost
    assert jobs.get(held.job_id).attempts == 2  # taken over once the lease ran out
    engine = create_engine(f"sqlite:///{app_dir / 'store.db'}")
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT memory_id, count(*) FROM memories GROUP BY 1")).all()
    engine.dispose()
    records = [gate.record(t.job_id) for t in tickets]  # the app sees the workers' decisions
    stored = [r for r in records if r.state == "stored"]
    assert stored and all(r.model_calls >= 14 for r in stored)
    assert len(rows) == len(stored) and {n for _, n in rows} == {1}  # no duplicate memory
    gate.close()


@pytest.mark.slow
def test_meclear_worker_runs_audit_and_admission_jobs_from_one_table(app_dir: Path, worker) -> None:
    """One ``meclear worker`` with both components drains both kinds; an unknown kind is a
    dead letter with its reason."""
    (app_dir / "adm_app.py").write_text(ADM_APP, encoding="utf-8")
    url = f"sqlite:///{app_dir / 'ledger.db'}"
    env = {"APP_LEDGER_URL": url, "APP_STORE": str(app_dir / "store.db")}
    env["APP_CALL_SECONDS"] = "0"
    retriever = _load(app_dir, env, "bg_app")
    audit_job = retriever.invoke("Which month was John in Italy?")[0].metadata["meclear"]
    gate = _load(app_dir, env, "adm_app")
    tickets = [gate.submit(c, ctx) for c, ctx in CANDIDATES[:2]]
    stray = gate.jobs.enqueue("reindex", "{}", key="r" * 64)
    proc = _worker(
        app_dir,
        env,
        "--component",
        "bg_app:build",
        "--component",
        "adm_app:build",
        "--until-idle",
    )
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["ran"] == 4 and summary["outcomes"] == {"done": 3, "dead": 1}
    jobs = gate.jobs
    assert jobs.stats("audit")["done"] == 1 and jobs.stats("admission")["done"] == 2
    assert jobs.get(audit_job["audit"]["job_id"]).state == "done"
    assert all(gate.record(t.job_id).state in ("stored", "rejected") for t in tickets)
    [dead] = jobs.dead_letters()
    assert dead.job_id == stray.job_id
    assert (
        dead.dead_reason
        == "unknown job kind 'reindex' (this worker runs: admission, audit, reverify)"
    )
    gate.close()
