"""Settlement re-verification jobs (``jobs.reverify``) on procrastinate in PostgreSQL.

SIMULATED (``tests.support.stale_employer``): the audit that records a challenge queues a
``reverify`` job on procrastinate; a drain of the queue (``run_audits``) upholds the trusted
settlement, then lifts it once the stale copy leaves the store, with no routine replay.
Needs a server (``MECLEAR_TEST_POSTGRES_URL``; skipped without).
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("procrastinate")

from sqlalchemy import create_engine, text

from meclear_integrations.ledger import HarmLedger, replay_pending
from tests.support import stale_employer as sam
from tests.unit_tests.background.test_settlement_authority import BUILD, evaluator_for


def _kinds(url: str) -> dict[str, int]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT args->>'kind', count(*) FROM procrastinate_jobs "
                "WHERE status = 'succeeded' GROUP BY 1"
            )
        ).all()
    engine.dispose()
    return {str(k): int(n) for k, n in rows}


def _component(url: str, ledger: HarmLedger, retired: set[str]) -> tuple[Any, Any]:
    from meclear_integrations.jobs import ProcrastinateQueue

    loop = {
        "ledger": ledger,
        "audit_queue": ProcrastinateQueue(url),
        "audit_workers": 0,
        "audit_backoff_seconds": 0.0,
        "audits_per_question_per_day": 100,
    }
    return BUILD["langchain"](sam.Counter(), loop, "background", retired)


@pytest.mark.slow
def test_procrastinate_runs_the_reverification_jobs(postgres_url: str) -> None:
    """The app process submits; a worker process (its own component and queue, as
    ``meclear worker`` builds them) runs the audits and the re-verifications they queue."""
    retired: set[str] = set()
    with HarmLedger(postgres_url) as ledger:
        app, ask = _component(postgres_url, ledger, retired)
        worker, _ = _component(postgres_url, ledger, retired)
        app._queue.apply_schema()

        def drain() -> None:
            worker._queue.run_worker(worker, wait=False)

        assert "t1" in {mid for mid, _ in ask(sam.QUESTION)}
        drain()
        right = next(r for r in ledger.runs() if r.recovered)
        ledger.feedback(
            right.run_id, correct=False, correction="OldCo", memory_ids=["t1"],
            authority="operator", source_id="ops",
        )  # fmt: skip
        replay_pending(ledger, evaluator_for=evaluator_for, reverify=False)
        shown = app.invoke(sam.QUESTION)  # a new audit (the first one is finished)
        assert "t1" not in {d.id for d in shown}
        assert not shown[0].metadata["meclear"]["audit"]["joined"]
        drain()  # the audit records a challenge; the reverify job it queues runs too
        assert ledger.stats()["settlements"]["upheld"] == 1
        retired.add("s1")
        ask(sam.QUESTION)
        drain()
        assert ledger.stats()["settlements"]["lifted"] >= 1
        assert "t1" in {mid for mid, _ in ask(sam.QUESTION)}
        assert _kinds(postgres_url).get("reverify") == 2
        for component in (app, worker):
            component.close()
            component._queue.close()
