"""Measured costs of background mode: request-path overhead and audit throughput.

- :func:`request_overhead`: a LangChain ``ClearingRetriever(mode="background")`` over an
  inner retriever returning ``k`` documents, against that inner retriever alone, queries
  interleaved in one run; the ledger holds ``ledger_runs`` recorded clearances first (a
  temporary SQLite file by default; with a PostgreSQL URL, a scratch database created on that
  server and dropped afterwards), bulk-loaded through :meth:`HarmLedger.record_many` (the
  rows and per-question state :meth:`HarmLedger.record` writes, ``_PREFILL_BATCH`` runs per
  transaction). Every query is a new question, so each one reads the
  ledger's scoped harm and durably enqueues an audit (the worst case). Reported: p50 / p99
  wall time per query, the p99 ratio and difference (quote the ratio: absolute times depend
  on the machine and its load), and the calling thread's CPU time per query (``cpu``: the
  work the request path does, apart from waiting for a shared machine's cores). No model
  is called on the request path; the model passed counts calls to prove it.
- :func:`audit_throughput`: jobs drained from the job table by 1 and by N worker threads
  whose audit is a latency-bound stub (it waits ``audit_seconds``, as an audit waits on
  its provider); the speed-up is the ratio of the two wall times.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from meclear_integrations.core.memory import Memory
from meclear_integrations.jobs.protocol import AuditOutcome
from meclear_integrations.jobs.snapshot import AuditSnapshot
from meclear_integrations.triggers.base import TriggerDecision

__all__ = ["audit_throughput", "request_overhead"]


def _quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": statistics.median(ordered) * 1e3,
        "p99_ms": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1e3,
    }


_PREFILL_BATCH = 2000


def _prefill(ledger: Any, runs: int, k: int) -> None:
    """Record ``runs`` verified clearances, ``_PREFILL_BATCH`` per transaction."""
    from meclear_integrations.core.engine import MeClearEngine

    memories = [Memory(id=f"h{i}", content=f"historic memory {i}") for i in range(k)]
    report = MeClearEngine().clear(
        memories, lambda c, t: 0.0 if any(m.id == "h0" for m in c) else 1.0
    )
    for start in range(0, runs, _PREFILL_BATCH):
        stop = min(runs, start + _PREFILL_BATCH)
        ledger.record_many(
            [
                (report, {"query": f"historic question {i}", "context": memories})
                for i in range(start, stop)
            ]
        )


def request_overhead(
    *, k: int = 20, queries: int = 300, ledger_runs: int = 1000, ledger_url: str | None = None
) -> dict[str, Any]:
    """Background request path against the plain retriever (module docstring).

    Args:
        k: Documents per query.
        queries: Queries timed for each of the two.
        ledger_runs: Clearances recorded in the ledger before timing.
        ledger_url: The ledger's server (None or ``sqlite``: a temporary SQLite file; a
            PostgreSQL URL: a scratch database on that server, dropped afterwards).

    Returns:
        p50 / p99 of each, the p99 ratio and difference, model calls on the request path.
    """
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda

    from meclear_integrations.langchain import ClearingRetriever, Loop, SimulatedChatModel
    from meclear_integrations.ledger import HarmLedger
    from meclear_integrations.simulation import redundant_harm_example

    from .ledger_lookup import scratch_url

    calls: list[int] = []

    class CountingChatModel(SimulatedChatModel):
        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            calls.append(1)
            return super()._generate(messages, stop, run_manager, **kw)

    documents = [
        Document(page_content=f"memory {i}: Sam walked the dog on day {i}.", id=f"d{i}")
        for i in range(k)
    ]
    plain: Any = RunnableLambda(lambda q: documents)
    with scratch_url(ledger_url) as url, HarmLedger(url) as ledger:
        started = time.perf_counter()
        _prefill(ledger, ledger_runs, k)
        prefill_seconds = time.perf_counter() - started
        backend = ledger.engine.dialect.name
        model = CountingChatModel.from_case(redundant_harm_example())
        component = ClearingRetriever(
            retriever=plain,
            llm=model,
            mode="background",
            loop=Loop(ledger=ledger, audit_workers=0),
        )
        for i in range(20):  # warm both paths
            plain.invoke(f"warm {i}")
            component.invoke(f"warm {i}")
        timed: dict[str, list[float]] = {"plain": [], "background": []}
        cpu: dict[str, list[float]] = {"plain": [], "background": []}
        for i in range(queries):
            for name, runnable in (("plain", plain), ("background", component)):
                started, used = time.perf_counter(), time.thread_time()
                runnable.invoke(f"What did Sam do on day {i}?")
                timed[name].append(time.perf_counter() - started)
                cpu[name].append(time.thread_time() - used)
        jobs = component._queue.stats()
        component._queue.close()
    plain_q, background_q = _quantiles(timed["plain"]), _quantiles(timed["background"])
    return {
        "k": k,
        "queries": queries,
        "ledger_runs": ledger_runs,
        "ledger_backend": backend,
        "prefill_seconds": prefill_seconds,
        "plain": plain_q,
        "background": background_q,
        "p99_ratio": background_q["p99_ms"] / plain_q["p99_ms"],
        "p99_added_ms": background_q["p99_ms"] - plain_q["p99_ms"],
        "p50_added_ms": background_q["p50_ms"] - plain_q["p50_ms"],
        "cpu": {"plain": _quantiles(cpu["plain"]), "background": _quantiles(cpu["background"])},
        "request_path_model_calls": len(calls),
        "jobs_queued": jobs["queued"],
    }


class _StubAuditor:
    """A latency-bound audit: waits ``seconds`` (the provider), then reports done."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def audit(self, snapshot: AuditSnapshot, *, run_id: str) -> AuditOutcome:
        time.sleep(self.seconds)
        return AuditOutcome("done", None, run_id)


def _drain(workers: int, jobs: int, seconds: float, directory: Path) -> float:
    from meclear_integrations.jobs.store import JobStore
    from meclear_integrations.jobs.worker import WorkerPool

    store = JobStore(directory / f"jobs-{workers}.db")
    decision = TriggerDecision(run=True, policy="always", reason="always")
    for i in range(jobs):
        memories = [Memory(id="m", content=f"memory of question {i}")]
        store.submit(AuditSnapshot.of(f"question {i}", f"q{i}", memories, decision))
    pool = WorkerPool(store, _StubAuditor(seconds), concurrency=workers, poll_seconds=0.01)
    started = time.perf_counter()
    pool.start()
    while store.stats()["done"] < jobs:
        time.sleep(0.01)
    elapsed = time.perf_counter() - started
    pool.stop()
    store.close()
    return elapsed


def audit_throughput(
    *, jobs: int = 40, audit_seconds: float = 0.2, workers: int = 4
) -> dict[str, Any]:
    """Audits per second with 1 and ``workers`` worker threads (module docstring).

    Args:
        jobs: Jobs drained in each run.
        audit_seconds: The stub audit's latency.
        workers: The larger pool.

    Returns:
        Wall seconds and audits per second of each, and the speed-up.
    """
    with tempfile.TemporaryDirectory() as tmp:
        one = _drain(1, jobs, audit_seconds, Path(tmp))
        many = _drain(workers, jobs, audit_seconds, Path(tmp))
    return {
        "jobs": jobs,
        "audit_seconds": audit_seconds,
        "workers": workers,
        "seconds_1": one,
        f"seconds_{workers}": many,
        "audits_per_second_1": jobs / one,
        f"audits_per_second_{workers}": jobs / many,
        "speedup": one / many,
    }
