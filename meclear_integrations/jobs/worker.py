"""Workers that run background jobs: in-process threads by default, ``meclear worker`` elsewhere.

A worker claims a job under a lease (:meth:`~.store.JobStore.claim`) and runs the handler
of its kind (:class:`~.kinds.JobKinds`): for an ``audit``, it parses the snapshot and hands
it to an :class:`~meclear_integrations.pipeline.audit.Auditor` (the component that enqueued
it: the same agent, judge and ledger), which runs the normal clearance with verification
and records the result in the ledger under the job id; for an ``admission``, the ConMem
decision of a candidate memory. While the handler runs, a heartbeat thread extends the
lease every ``heartbeat_seconds`` (a third of the lease by default), so a long job is not
taken over while its worker lives; a killed worker's heartbeat stops with it and its lease
runs out. What comes back decides the job:

- ``done``: the ledger holds the verified result; the job is finished.
- ``retry``: the provider is down (transient errors after the engine's own retries, the
  wall bound, an open circuit breaker) or the ledger write failed: the job goes back with
  an exponential backoff (tenacity's ``wait_exponential_jitter`` over the attempt count)
  until ``max_attempts``, then to the dead letters. The request path never waits on it.
- ``dead``: the payload cannot run (unreadable, altered memory text, a permanent failure
  such as a bad credential or a bug in the agent, a kind this worker has no handler for):
  dead letter with the reason.

Every final write carries the claim's fencing token (``ClaimedJob.fence``): a worker that
lost its lease (paused past it, its job taken over) has its ``complete`` / ``retry`` /
``dead`` refused and logged by the job table instead of overwriting the new holder's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tenacity import RetryCallState, wait_exponential_jitter

from ..core.redaction import redact
from .claim import ClaimedJob, JobTable, default_worker_name
from .kinds import JobKinds
from .protocol import Auditor, AuditOutcome

__all__ = ["AuditWorker", "WorkerPool", "backoff_seconds"]

logger = logging.getLogger(__name__)


def backoff_seconds(attempt: int, *, initial: float = 1.0, maximum: float = 300.0) -> float:
    """The delay before attempt ``attempt + 1`` (tenacity's exponential backoff with jitter).

    Args:
        attempt: The attempt that failed (1 for the first).
        initial: The first delay, in seconds.
        maximum: The largest delay.

    Returns:
        Seconds to wait.
    """
    state = RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
    state.attempt_number = max(1, attempt)
    return float(wait_exponential_jitter(initial=initial, max=maximum, jitter=initial)(state))


class AuditWorker:
    """Runs due jobs one at a time (a thread of a :class:`WorkerPool`, or the CLI).

    Args:
        store: The job table.
        auditor: Runs each job: a component (an auditor, or an object with
            ``job_handlers()``) or a :class:`~.kinds.JobKinds` registry.
        name: The worker's name in the job table (default: host, pid and a random tag).
        lease_seconds: How long a claimed job is this worker's without a heartbeat.
        heartbeat_seconds: How often the lease is extended while a job runs (default:
            a third of ``lease_seconds``; 0: no heartbeat).
        backoff: Attempt -> seconds before the next try (default :func:`backoff_seconds`).
        only_known_kinds: Claim only the kinds ``auditor`` runs (the default: in-process
            pools and drains of a component leave other components' jobs alone); False
            (``meclear worker``): claim every kind and dead-letter the unknown ones.
    """

    def __init__(
        self,
        store: JobTable,
        auditor: Auditor | JobKinds | Any,
        *,
        name: str | None = None,
        lease_seconds: float = 180.0,
        heartbeat_seconds: float | None = None,
        backoff: Callable[[int], float] = backoff_seconds,
        only_known_kinds: bool = True,
    ) -> None:
        if lease_seconds <= 0:
            raise ValueError("lease_seconds must be positive")
        self.store = store
        self.auditor = auditor
        self.kinds = JobKinds.of(auditor)
        self.name = name or default_worker_name()
        self.lease_seconds = lease_seconds
        self.heartbeat_seconds = (
            lease_seconds / 3 if heartbeat_seconds is None else heartbeat_seconds
        )
        if not 0 <= self.heartbeat_seconds < lease_seconds:
            raise ValueError("heartbeat_seconds must be at least 0 and shorter than the lease")
        self.backoff = backoff
        self._claim_kinds = self.kinds.kinds if only_known_kinds else None

    def run_once(self) -> tuple[str, AuditOutcome] | None:
        """Claim and run one due job.

        Returns:
            The job id and its outcome, or None when nothing was due.
        """
        job = self.store.claim(self.name, lease_seconds=self.lease_seconds, kinds=self._claim_kinds)
        if job is None:
            return None
        with self._heartbeat(job):
            outcome = self.kinds.run(job.kind, job.payload, job.job_id)
        self._settle(job, outcome)
        return job.job_id, outcome

    def run_until_idle(self, *, limit: int | None = None) -> list[tuple[str, AuditOutcome]]:
        """Run due jobs until none is due (or ``limit`` jobs ran).

        Args:
            limit: The most jobs to run.

        Returns:
            The jobs run and their outcomes.
        """
        done: list[tuple[str, AuditOutcome]] = []
        while limit is None or len(done) < limit:
            ran = self.run_once()
            if ran is None:
                break
            done.append(ran)
        return done

    @contextmanager
    def _heartbeat(self, job: ClaimedJob) -> Iterator[None]:
        """Extend ``job``'s lease every ``heartbeat_seconds`` while the body runs."""
        if self.heartbeat_seconds <= 0:
            yield
            return
        done = threading.Event()

        def beat() -> None:
            while not done.wait(self.heartbeat_seconds):
                try:
                    if not self.store.heartbeat(
                        job.job_id, self.name, lease_seconds=self.lease_seconds, fence=job.fence
                    ):
                        return  # taken over or finished: nothing more to extend
                except Exception as exc:  # the database is away: the lease may run out
                    logger.warning("MeClear job %s heartbeat failed: %s", job.job_id, exc)

        thread = threading.Thread(target=beat, name=f"meclear-heartbeat-{job.job_id[:8]}")
        thread.daemon = True
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()

    def _settle(self, job: ClaimedJob, outcome: AuditOutcome) -> None:
        if outcome.state == "done":
            self.store.complete(job.job_id, ledger_run_id=outcome.ledger_run_id, fence=job.fence)
        elif outcome.state == "retry" and job.attempts < job.max_attempts:
            delay = self.backoff(job.attempts)
            logger.warning(
                "MeClear %s job %s attempt %d failed, retrying in %.1fs: %s",
                job.kind,
                job.job_id,
                job.attempts,
                delay,
                redact(str(outcome.reason))[:300],
            )
            self.store.retry(job.job_id, delay=delay, error=str(outcome.reason), fence=job.fence)
        else:
            reason = str(outcome.reason)
            if outcome.state == "retry":
                reason = f"gave up after {job.attempts} attempts: {reason}"
            logger.warning(
                "MeClear %s job %s dead-lettered: %s", job.kind, job.job_id, redact(reason)[:300]
            )
            if self.store.dead(job.job_id, reason=reason, fence=job.fence):
                self.kinds.dead(job.kind, job.payload, job.job_id, reason)


class WorkerPool:
    """``concurrency`` worker threads polling one job table (daemon threads).

    The embedded default: a component in ``mode="background"`` starts one pool with its
    ledger, so a plain application needs no separate process. Stop it with :meth:`stop`
    (or let the process exit; a job in flight is taken over after its lease).

    Args:
        store: The job table.
        auditor: Runs each job (a component or a :class:`~.kinds.JobKinds`).
        concurrency: Worker threads.
        poll_seconds: How long an idle thread waits before looking again.
        **worker_kwargs: Passed to each :class:`AuditWorker`.
    """

    def __init__(
        self,
        store: JobTable,
        auditor: Auditor | JobKinds | Any,
        *,
        concurrency: int = 1,
        poll_seconds: float = 0.5,
        **worker_kwargs: Any,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.workers = [AuditWorker(store, auditor, **worker_kwargs) for _ in range(concurrency)]
        self.poll_seconds = poll_seconds
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def running(self) -> bool:
        """Some worker thread is alive."""
        return any(t.is_alive() for t in self._threads)

    def start(self) -> WorkerPool:
        """Start the threads (once)."""
        if not self._threads:
            for i, worker in enumerate(self.workers):
                thread = threading.Thread(
                    target=self._loop, args=(worker,), name=f"meclear-audit-{i}", daemon=True
                )
                thread.start()
                self._threads.append(thread)
        return self

    def wake(self) -> None:
        """Look for jobs now (called after a submit)."""
        self._wake.set()

    def stop(self, timeout: float | None = 10.0) -> None:
        """Ask the threads to stop after their current job and wait for them."""
        self._stop.set()
        self._wake.set()
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            thread.join(left)

    def _loop(self, worker: AuditWorker) -> None:
        while not self._stop.is_set():
            try:
                ran = worker.run_once()
            except Exception as exc:  # the database is away: wait and look again
                logger.warning("MeClear audit worker: %s", redact(f"{type(exc).__name__}: {exc}"))
                ran = None
            if ran is None:
                self._wake.wait(self.poll_seconds)
                self._wake.clear()
