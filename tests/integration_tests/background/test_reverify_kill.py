"""A ``meclear worker`` killed (kill -9) in the middle of a settlement re-verification loses
nothing: another worker takes the ``reverify`` job over after its lease, and the ledger holds
one verdict (SIMULATED, ``tests.support.stale_employer``; the agent sleeps per call).
"""

from __future__ import annotations

import os
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from .conftest import wait_for

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="kill -9")

APP = textwrap.dedent(
    '''
    """A background app over the stale-employer store (SIMULATED, a slow scripted agent)."""
    import os
    import time

    from langchain_core.runnables import RunnableLambda

    from meclear_integrations import ClearanceConfig
    from meclear_integrations.langchain import ClearingRetriever
    from meclear_integrations.ledger import HarmLedger
    from tests.support import stale_employer as sam


    def build():
        counter = sam.Counter()
        gone = set(filter(None, os.environ.get("APP_RETIRED", "").split(",")))
        docs = [d for d in sam.documents(1) if d.id not in gone]

        def agent(prompt):
            time.sleep(float(os.environ.get("APP_CALL_SECONDS", "0")))
            return counter.agent(prompt)

        return ClearingRetriever(
            retriever=RunnableLambda(lambda q: [d.model_copy(deep=True) for d in docs]),
            llm=RunnableLambda(agent, name="slow_agent"),
            judge=counter.judge,
            clearance=ClearanceConfig(failure={"retry": {"initial_backoff": 0.0, "jitter": 0.0}}),
            mode="background",
            loop={
                "ledger": HarmLedger(os.environ["APP_LEDGER_URL"]),
                "audit_workers": 0,
                "audit_backoff_seconds": 0.0,
            },
        )
    '''
)


def _build(app_dir: Path, env: dict[str, str]) -> Any:
    sys.path.insert(0, str(app_dir))
    old = dict(os.environ)
    os.environ.update(env)
    try:
        import rv_app  # type: ignore[import-not-found]

        return rv_app.build()
    finally:
        os.environ.clear()
        os.environ.update(old)
        sys.path.remove(str(app_dir))
        sys.modules.pop("rv_app", None)


@pytest.mark.slow
def test_a_worker_killed_mid_reverification_loses_nothing(app_dir: Path, worker: Any) -> None:
    from meclear_integrations.jobs import JobStore
    from meclear_integrations.jobs.kinds import AUDIT, JobKinds, audit_handler
    from meclear_integrations.jobs.reverify import REVERIFY
    from meclear_integrations.jobs.worker import AuditWorker
    from meclear_integrations.ledger import HarmLedger, replay_pending
    from tests.support import stale_employer as sam
    from tests.unit_tests.background.test_settlement_authority import evaluator_for

    (app_dir / "rv_app.py").write_text(APP, encoding="utf-8")
    url = f"sqlite:///{app_dir / 'ledger.db'}"
    env = {"APP_LEDGER_URL": url}
    app = _build(app_dir, env)
    app.invoke(sam.QUESTION)
    app.run_audits()
    ledger = HarmLedger(url)
    right = next(r for r in ledger.runs() if r.recovered)
    ledger.feedback(
        right.run_id, correct=False, correction="OldCo", memory_ids=["t1"],
        authority="operator", source_id="ops",
    )  # fmt: skip
    replay_pending(ledger, evaluator_for=evaluator_for, reverify=False)

    retired = _build(app_dir, {**env, "APP_RETIRED": "s1"})  # the stale copy left the store
    assert "t1" not in {d.id for d in retired.invoke(sam.QUESTION)}
    store = JobStore(url)
    AuditWorker(store, JobKinds({AUDIT: audit_handler(retired)})).run_until_idle()
    [job] = store.list_jobs("queued", kind=REVERIFY)

    slow = {**env, "APP_RETIRED": "s1", "APP_CALL_SECONDS": "0.3"}
    victim = worker(slow, "--lease-seconds", "2")
    wait_for(lambda: store.get(job.job_id).state == "running")
    os.kill(victim.pid, signal.SIGKILL)  # mid re-verification
    victim.wait(30)
    assert store.get(job.job_id).state == "running"  # held by the dead worker's lease

    survivor = worker(slow, "--lease-seconds", "2")
    wait_for(lambda: store.get(job.job_id).state == "done", seconds=120)
    survivor.send_signal(signal.SIGTERM)
    survivor.wait(60)
    record = store.get(job.job_id)
    assert record.attempts == 2 and record.state == "done"  # 0 lost
    lifted = [e for e in ledger.history("t1").events if e.event == "lifted"]
    assert len(lifted) == 1  # one verdict
    assert ledger.stats()["settlements"]["pending"] == 0
    assert "t1" in {d.id for d in retired.invoke(sam.QUESTION)}
    for component in (app, retired):
        component.close()
    store.close()
    ledger.close()
