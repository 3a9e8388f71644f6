"""Challenged settlements re-verified by the audit worker, not by the routine replay.

SIMULATED ("Where does Sam work?", ``tests.support.stale_employer``). An operator settles
the true memory ``t1`` against a stale "correction"; the live reference-free judge rejects
the answer without it, so every audit that withholds it records a challenge. In background
mode the audit that records one queues a ``reverify`` job (``jobs.reverify``) on the same
durable queue: the running loop (ask, then the component's workers) lifts the settlement
once the stale copy leaves the store, with nobody running ``replay_pending``, in both
frameworks, sync and async; a trusted settlement challenged on every ask costs one
re-verification (bounded per question, quiet period); a worker killed with the job (lease
expiry) or after its verdict loses nothing and writes no second verdict; a payload of
another version goes to the dead letters.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.jobs import AuditWorker, JobStore
from meclear_integrations.jobs.kinds import JobKinds
from meclear_integrations.jobs.reverify import REVERIFY, ReverifyJob
from meclear_integrations.ledger import HarmLedger, replay_pending
from tests.support import stale_employer as sam
from tests.support.clocks import Clock
from tests.unit_tests.background.test_settlement_authority import BUILD, evaluator_for


def _loop(ledger: HarmLedger, queue: JobStore) -> dict[str, Any]:
    return {
        "ledger": ledger,
        "audit_queue": queue,
        "audit_workers": 0,
        "audit_backoff_seconds": 0.0,
        "audits_per_question_per_day": 100,
    }


def _settle(ledger: HarmLedger, ask: Any, component: Any) -> None:
    """The question answered right, then an operator's stale correction replayed."""
    assert "t1" in {mid for mid, _ in ask(sam.QUESTION)}
    component.run_audits()
    right = next(r for r in ledger.runs() if r.recovered)
    ledger.feedback(
        right.run_id, correct=False, correction="OldCo", memory_ids=["t1"],
        authority="operator", source_id="ops",
    )  # fmt: skip
    [replayed] = replay_pending(ledger, evaluator_for=evaluator_for, reverify=False)
    assert "t1" in replayed.report.cleared_ids


def _lifted_by_the_running_loop(url: str, framework: str, asynchronous: bool = False) -> None:
    counter = sam.Counter()
    retired: set[str] = set()
    with HarmLedger(url) as ledger:
        queue = JobStore(url)
        component, ask = BUILD[framework](counter, _loop(ledger, queue), "background", retired)
        if asynchronous:

            def ask(question: str) -> list[tuple[str, str]]:  # the async request path
                docs = asyncio.run(component.ainvoke(question))
                return [(str(d.id), d.page_content) for d in docs]

        def asked() -> set[str]:
            shown = {mid for mid, _ in ask(sam.QUESTION)}
            component.run_audits()  # the running loop's workers (no routine replay)
            return shown

        _settle(ledger, ask, component)
        assert "t1" not in asked()  # the trusted settlement holds; its challenge is upheld
        [upheld] = queue.list_jobs(kind=REVERIFY)
        assert upheld.state == "done" and ledger.stats()["settlements"]["upheld"] == 1

        retired.add("s1")  # the stale copy leaves the store
        assert "t1" not in asked()  # withheld once more: that audit's challenge is lifted
        assert ledger.stats()["settlements"]["lifted"] >= 1
        assert ledger.stats()["settlements"]["pending"] == 0
        event = ledger.history("t1").events[-1]
        assert event.event == "lifted" and event.actor == "meclear:reverify"
        for _ in range(3):
            assert "t1" in asked()  # served again, every ask
        jobs = queue.list_jobs(kind=REVERIFY)
        assert len(jobs) == 2 and {j.state for j in jobs} == {"done"}
        component.close()
        queue.close()


@pytest.mark.parametrize("framework", list(BUILD))
def test_the_worker_lifts_a_wrong_settlement_without_the_routine(
    tmp_path: Path, framework: str
) -> None:
    _lifted_by_the_running_loop(f"sqlite:///{tmp_path / 'ledger.db'}", framework)


def test_the_async_request_path_gets_the_same_lift(tmp_path: Path) -> None:
    _lifted_by_the_running_loop(f"sqlite:///{tmp_path / 'ledger.db'}", "langchain", True)


@pytest.mark.parametrize("framework", list(BUILD))
def test_a_trusted_settlement_challenged_on_every_ask_is_reverified_once(
    tmp_path: Path, framework: str
) -> None:
    """Twelve asks, twelve audits, each a challenge: one re-verification job, one verdict,
    one re-verification run (counted); t1 stays withheld."""
    counter = sam.Counter()
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with HarmLedger(url) as ledger:
        queue = JobStore(url)
        component, ask = BUILD[framework](counter, _loop(ledger, queue), "background")
        _settle(ledger, ask, component)
        for _ in range(12):
            assert "t1" not in {mid for mid, _ in ask(sam.QUESTION)}
            component.run_audits()
        assert ledger.stats()["settlements"]["unconfirmed_runs"] >= 12
        assert len(queue.list_jobs(kind=REVERIFY)) == 1
        assert ledger.stats()["settlements"] | {"unconfirmed_runs": 0} == {
            "unconfirmed_runs": 0, "pending": 0, "lifted": 0, "upheld": 1, "reinstated": 0,
        }  # fmt: skip
        assert sum(r.origin == "reverify" for r in ledger.runs(limit=100)) == 1
        component.close()
        queue.close()


def test_a_killed_worker_loses_no_reverification_and_writes_one_verdict(
    tmp_path: Path, clock: Clock
) -> None:
    """kill -9 semantics on the job table: a worker dies holding the job (taken over after
    its lease), and one dies after its verdict but before ``complete`` (the job runs again
    and writes nothing more)."""
    counter = sam.Counter()
    retired: set[str] = set()
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with HarmLedger(url) as ledger:
        queue = JobStore(url, clock=clock)
        component, ask = BUILD["langchain"](counter, _loop(ledger, queue), "background", retired)
        _settle(ledger, ask, component)
        retired.add("s1")
        ask(sam.QUESTION)
        auditor = AuditWorker(queue, component, name="auditor", lease_seconds=60)
        ran = auditor.run_once()  # the audit: records the challenge, queues its job
        assert ran is not None and ran[1].state == "done"
        [job] = queue.list_jobs("queued", kind=REVERIFY)
        held = queue.claim("dead-worker", lease_seconds=60, kinds=(REVERIFY,))  # killed
        assert held is not None and held.job_id == job.job_id
        survivor = AuditWorker(queue, component, name="survivor", lease_seconds=60)
        assert survivor.run_once() is None  # the lease still holds
        clock.now += 61
        taken = survivor.run_once()
        assert taken is not None and taken[0] == job.job_id and taken[1].state == "done"
        record = queue.get(job.job_id)
        assert record.state == "done" and record.attempts == 2 and record.worker == "survivor"
        assert record.ledger_run_id is not None
        assert ledger.find_run(record.ledger_run_id).origin == "reverify"
        lifted = [e for e in ledger.history("t1").events if e.event == "lifted"]
        assert len(lifted) == 1

        # a worker that wrote the verdict and died before complete(): the job runs again
        again = JobKinds.of(component).run(REVERIFY, held.payload, job.job_id)
        assert again.state == "done" and "no pending challenge" in (again.reason or "")
        assert [e for e in ledger.history("t1").events if e.event == "lifted"] == lifted
        assert "t1" in {mid for mid, _ in ask(sam.QUESTION)}
        component.close()
        queue.close()


def test_a_reverify_payload_of_another_version_or_namespace_is_dead_lettered(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with HarmLedger(url) as ledger:
        queue = JobStore(url)
        component, _ = BUILD["llama_index"](sam.Counter(), _loop(ledger, queue), "background")
        kinds = JobKinds.of(component)
        assert REVERIFY in kinds.kinds
        old = '{"version": 0, "namespace": "default", "query_id": "q", "challenge": "c"}'
        outcome = kinds.run(REVERIFY, old, "j1")
        assert outcome.state == "dead" and "version-1" in (outcome.reason or "")
        other = ReverifyJob(namespace="elsewhere", query_id="q", challenge="c").dumps()
        outcome = kinds.run(REVERIFY, other, "j2")
        assert outcome.state == "dead" and "elsewhere" in (outcome.reason or "")
        nothing = ReverifyJob(namespace=ledger.namespace, query_id="q", challenge="c").dumps()
        assert kinds.run(REVERIFY, nothing, "j3").state == "done"  # nothing pending: no call
        component.close()
        queue.close()


def test_one_pending_reverification_per_question_then_the_audit_backoff(tmp_path: Path) -> None:
    """Each recorded challenge asks to queue: the question's pending job is joined (nothing
    new queued); a finished one counts as fixing its question (no growing backoff) and the
    audits' backoff holds the next one back (the gate's rows of scope ``reverify``)."""
    from meclear_integrations.jobs.audit_gate import AuditGate
    from meclear_integrations.jobs.reverify import queue_reverify

    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with HarmLedger(url) as ledger:
        queue = JobStore(url)
        component, ask = BUILD["langchain"](sam.Counter(), _loop(ledger, queue), "background")
        _settle(ledger, ask, component)
        ask(sam.QUESTION)
        AuditWorker(queue, component).run_once()  # the audit: a challenge, its job queued
        [job] = queue.list_jobs("queued", kind=REVERIFY)
        challenge = next(r for r in ledger.runs() if r.clearance_search == "prior")
        for _ in range(5):
            assert queue_reverify(component, challenge.run_id, quiet_seconds=0) is None
        assert len(queue.list_jobs(kind=REVERIFY)) == 1
        AuditWorker(queue, component).run_until_idle()
        assert queue.get(job.job_id).state == "done"

        def gate(backoff: float) -> AuditGate:
            return AuditGate(
                ledger, queue, per_day=100, backoff_seconds=backoff, pending_seconds=600.0,
                scope=REVERIFY,
            )  # fmt: skip

        held = gate(3600.0).admit(challenge.query_id)
        assert held.action == "backoff" and held.reason == "backoff"
        row = gate(3600.0).state(challenge.query_id)
        assert row is not None and row["unfixed_streak"] == 0 and row["attempts"] == 1
        assert gate(3600.0).state("another question") is None
        assert (
            AuditGate(ledger, queue, per_day=100, backoff_seconds=0.0, pending_seconds=600.0).state(
                challenge.query_id
            )["pending_job_id"]
            != job.job_id
        )  # the audits' own rows
        component.close()
        queue.close()


def test_the_ledgers_quiet_period_configures_the_worker(tmp_path: Path) -> None:
    """``HarmLedger(reverify_quiet_seconds=0)``: every challenge is re-verified (counted)."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with HarmLedger(url, reverify_quiet_seconds=0) as ledger:
        queue = JobStore(url)
        component, ask = BUILD["langchain"](sam.Counter(), _loop(ledger, queue), "background")
        _settle(ledger, ask, component)
        for _ in range(3):
            ask(sam.QUESTION)
            component.run_audits()
        assert len(queue.list_jobs("done", kind=REVERIFY)) == 3
        assert ledger.stats()["settlements"]["upheld"] == 3
        component.close()
        queue.close()
    with pytest.raises(ConfigurationError, match="reverify_quiet_seconds"):
        HarmLedger(url, reverify_quiet_seconds=-1)


@pytest.mark.parametrize("mode", ["clear", "background"])
@pytest.mark.parametrize("framework", list(BUILD))
def test_reference_runs_of_both_frameworks_keep_their_reference(
    tmp_path: Path, framework: str, mode: str
) -> None:
    """A run judged against the application's reference (inline, or its background audit)
    keeps that reference in a text ledger, so its settlement can be re-verified later."""
    from meclear_integrations.llama_index.reference import query_reference

    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with HarmLedger(url) as ledger:
        queue = JobStore(url)
        loop = _loop(ledger, queue) if mode == "background" else {"ledger": ledger}
        component, _ = BUILD[framework](sam.Counter(), loop, mode)
        if framework == "langchain":
            component.invoke(sam.QUESTION, config={"metadata": {"meclear_reference": "NewCo"}})
        else:
            with query_reference("NewCo"):
                component.clear_nodes(sam.nodes(1), sam.QUESTION)
        if mode == "background":
            component.run_audits()
        [run] = [r for r in ledger.runs() if r.success_signal == "reference"]
        assert run.extra["reference"] == "NewCo"
        component.close()
        queue.close()
