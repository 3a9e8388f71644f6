"""Admission off the write path: acknowledge a write at once, decide in a durable job.

:class:`BackgroundAdmission` takes a candidate, queues an ``admission`` job on the shared
durable job machinery (:mod:`meclear_integrations.jobs`: the same table, leases, heartbeat,
backoff, dead letters and workers as the background clearance audits) and returns an
:class:`AdmissionTicket` with no model call. A worker runs the ordinary ConMem decision
(CMTE store / reject), records the decision, its reasons and its cost in a durable
:class:`AdmissionRecord` (the status an application queries with :meth:`record`), calls
the store callbacks and emits :class:`BackgroundAdmissionEvent` s (``acknowledged``,
``retrying``, ``decided``, ``failed``). The synchronous path
(:meth:`ConMemAdmitter.decide`) stays.

Queues:

- **Embedded default**: a :class:`~meclear_integrations.jobs.JobStore` (SQLite beside the
  ledger: ``MECLEAR_LEDGER_URL`` or ``meclear-ledger.db``; or the URL/path given as
  ``jobs=``) with ``workers`` in-process threads started here: a plain app works unchanged
  and a restarted one finishes what a dead one left.
- **Several replicas**: a :class:`~meclear_integrations.jobs.ProcrastinateQueue` on the
  ledger's PostgreSQL (``jobs=ProcrastinateQueue(url)``, ``workers=0``) with
  ``meclear worker --component app:gate`` processes (``JobStore`` on PostgreSQL works
  too).

Delivery is at least once, the store is idempotent:

- The memory's id is the caller's id or the candidate's content hash
  (:func:`~meclear_integrations.runtime.hashing.content_hash`); callbacks write it by id (an
  upsert), so a decision applied twice stores one memory.
- The decision is recorded before the store callback runs and marked ``applied`` after
  it: a job taken over from a killed worker reuses the recorded decision (no second
  model bill) and skips a store that already happened.
- Identical writes in flight (same memory id, candidate and context) join one job.
- A provider outage (transient errors after the engine's own retries) makes the job back
  off (``retrying``) instead of failing; after the last attempt it is dead-lettered and
  recorded ``failed`` (``on_error`` decides whether it is stored).

Where a pending candidate lives (``visibility``) is a documented choice:

- ``"hidden"`` (default): a pending candidate is **not retrievable until admitted**. The
  store sees it only when the decision is ``store`` (``on_store`` writes it); a rejected
  or failed one never reaches retrieval. Safe: a misaligned memory is never read.
- ``"pending"``: the candidate is written at once, **retrievable and marked pending**
  (``on_write`` writes it with ``admission_status="pending"``); ``on_store`` marks it
  admitted and ``on_reject`` removes it. Fresh memories are usable at once, at the price
  of a window in which a misaligned one can be read (and a store able to update/delete).
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from ..core.errors import ConfigurationError
from ..jobs.kinds import ADMISSION, JobHandler
from ..jobs.protocol import AuditOutcome
from ..runtime.hashing import content_hash
from .background_models import (
    AdmissionJob,
    AdmissionRecord,
    AdmissionTicket,
    BackgroundAdmissionEvent,
    State,
    Visibility,
)
from .decision import AdmissionDecision, AdmissionFailedError
from .engine import ConMemAdmitter
from .errors import InvalidCandidateError
from .hook import OnError
from .prompts import Context, render_context

__all__ = [
    "AdmissionJob",
    "AdmissionRecord",
    "AdmissionTicket",
    "BackgroundAdmission",
    "BackgroundAdmissionEvent",
    "Visibility",
    "admission_key",
]

logger = logging.getLogger(__name__)

Callback = Callable[[AdmissionJob, AdmissionRecord], None]
Listener = Callable[[BackgroundAdmissionEvent], Awaitable[None] | None]


def admission_key(memory_id: str, candidate: str, context: str) -> str:
    """The single-flight key of an admission job (64 hex digits).

    Args:
        memory_id: The memory's id in the store.
        candidate: The candidate text.
        context: The rendered context.

    Returns:
        The key (the kind is hashed in, so it never equals an audit's key).
    """
    digest = hashlib.sha256(ADMISSION.encode("ascii"))
    for part in (memory_id, content_hash(candidate), content_hash(context)):
        digest.update(b"\x1f" + part.encode("utf-8"))
    return digest.hexdigest()


def _open_jobs(jobs: Any) -> tuple[Any, bool]:
    """The queue for ``jobs`` (a queue, a URL/path, or None) and whether we opened it."""
    if jobs is not None and callable(getattr(jobs, "enqueue", None)):
        return jobs, False
    if jobs is None or isinstance(jobs, str | os.PathLike):
        from ..jobs.store import JobStore

        return JobStore(jobs), True
    raise TypeError(
        "jobs must be a JobStore, a ProcrastinateQueue, a database URL or path, or None"
    )


class BackgroundAdmission:
    """Acknowledge at once, decide in a durable job (module docstring).

    Args:
        admitter: The ConMem engine (its model makes every call, in the worker).
        jobs: The queue: a ``JobStore`` or ``ProcrastinateQueue``, a database URL or path
            for a ``JobStore``, or None (the ledger's default database).
        workers: In-process worker threads to start on a ``JobStore`` (0: none, run
            ``meclear worker`` processes instead).
        lease_seconds: A claimed job's lease (extended by the workers' heartbeat).
        visibility: ``hidden`` (not retrievable until admitted) or ``pending``
            (retrievable, marked pending; needs ``on_write`` and ``on_reject``).
        on_write: ``pending`` visibility: writes the candidate at submit, marked pending.
        on_store: Called once the decision is ``store`` (hidden: write it now; pending:
            mark it admitted). Write by ``job.memory_id`` (upsert): it may run twice.
        on_reject: Called once the decision is ``do_not_store`` or failed under
            ``on_error="reject"`` (pending: remove it).
        listener: Receives every :class:`BackgroundAdmissionEvent` (in the process whose
            worker ran the job).
        on_failure: Called with ``(job, record)`` when a decision fails (a stage never
            parsed, the provider stayed away past the last attempt, a store callback kept
            raising), whatever ``on_error`` does with it: the failure reaches the caller,
            not only the record. The failed record keeps the job (``resubmit``).
        on_error: What a failed decision does: ``admit`` stores it; ``reject`` and
            ``raise`` (nothing to raise to in a worker) record it as ``failed`` and keep it
            out of the store (``on_reject`` is called).

    Example:
        >>> from meclear_integrations.admission import ConMemAdmitter
        >>> from meclear_integrations.admission.background import BackgroundAdmission
        >>> from meclear_integrations.admission.scripted import ScriptedAdmissionModel
        >>> import os, tempfile
        >>> jobs = os.path.join(tempfile.mkdtemp(), "jobs.db")  # default: the ledger file
        >>> stored = []
        >>> gate = BackgroundAdmission(
        ...     ConMemAdmitter(ScriptedAdmissionModel()),
        ...     jobs=jobs,
        ...     on_store=lambda job, record: stored.append(job.candidate),
        ... )
        >>> ticket = gate.submit("User is allergic to shellfish.",
        ...                      "user: I'm allergic to shellfish, never suggest shrimp.")
        >>> ticket.status, ticket.model_calls
        ('pending', 0)
        >>> gate.drain(timeout=30)
        True
        >>> gate.record(ticket.job_id).state, stored
        ('stored', ['User is allergic to shellfish.'])
        >>> gate.close()
    """

    def __init__(
        self,
        admitter: ConMemAdmitter,
        *,
        jobs: Any = None,
        workers: int = 2,
        lease_seconds: float = 180.0,
        visibility: Visibility = "hidden",
        on_write: Callback | None = None,
        on_store: Callback | None = None,
        on_reject: Callback | None = None,
        listener: Listener | None = None,
        on_error: OnError = "reject",
        on_failure: Callback | None = None,
    ) -> None:
        if visibility not in ("hidden", "pending"):
            raise ValueError(f"visibility must be 'hidden' or 'pending', not {visibility!r}")
        if visibility == "pending" and (on_write is None or on_reject is None):
            raise ValueError(
                "visibility='pending' writes candidates at once: give on_write (write it "
                "marked pending) and on_reject (remove it when rejected)"
            )
        if workers < 0:
            raise ValueError("workers must be at least 0")
        from .records import AdmissionRecords

        self.admitter = admitter
        self.jobs, self._own_jobs = _open_jobs(jobs)
        url = str(getattr(self.jobs, "url", ""))
        if workers and url.startswith("sqlite") and (url == "sqlite://" or ":memory:" in url):
            raise ConfigurationError(
                "an in-memory SQLite job table cannot be shared with worker threads: give "
                "jobs= a file path or URL (or workers=0)"
            )
        self.records_store = AdmissionRecords(
            self.jobs.engine, getattr(self.jobs, "namespace", "default")
        )
        self.visibility: Visibility = visibility
        self.on_write, self.on_store, self.on_reject = on_write, on_store, on_reject
        self.on_failure = on_failure
        self.listener = listener
        self.on_error: OnError = on_error
        self._submitted: list[str] = []
        self._lock = threading.Lock()
        self._pool: Any = None
        if workers and callable(getattr(self.jobs, "start_workers", None)):
            self._pool = self.jobs.start_workers(
                self, concurrency=workers, lease_seconds=lease_seconds
            )

    # -- what workers run ------------------------------------------------------------
    def job_handlers(self) -> dict[str, JobHandler]:
        """The job kinds this component runs: ``admission``."""
        return {ADMISSION: _Handler(self)}

    @property
    def job_queue(self) -> Any:
        """The queue ``meclear worker`` serves for this component."""
        return self.jobs

    # -- request path --------------------------------------------------------------
    def submit(
        self,
        candidate: str,
        context: Context,
        *,
        candidate_id: str | None = None,
        payload: dict[str, Any] | None = None,
    ) -> AdmissionTicket:
        """Acknowledge ``candidate`` now (no model call) and queue its decision.

        Args:
            candidate: The candidate memory.
            context: Its historical context.
            candidate_id: The caller's id (the memory's id in the store; default: the
                candidate's content hash).
            payload: What ``on_store`` / ``on_write`` need to write it (kept in the job;
                JSON-serialisable).

        Returns:
            The ticket (``pending``): ``ticket.result(timeout)`` returns the decided record
            or raises :class:`BackgroundAdmissionFailedError`.

        Raises:
            InvalidCandidateError: The write cannot be admitted (empty, not text, too long,
                malformed): refused at once, nothing queued, no model call.
        """
        self.admitter.validate(candidate, context, candidate_id=candidate_id)
        rendered = render_context(context)
        memory_id = candidate_id or content_hash(candidate)
        job = AdmissionJob(
            candidate=candidate,
            context=rendered,
            candidate_id=candidate_id,
            memory_id=memory_id,
            payload=dict(payload or {}),
            submitted_at=time.time(),
        )
        ticket = self.jobs.enqueue(
            ADMISSION, job.dumps(), key=admission_key(memory_id, candidate, rendered)
        )
        job = job.model_copy(update={"job_id": ticket.job_id})
        record = AdmissionRecord(
            job_id=ticket.job_id,
            candidate_id=candidate_id,
            state="pending",
            acknowledged_at=job.submitted_at,
        )
        self.records_store.add_pending(record, memory_id)
        with self._lock:
            if ticket.job_id not in self._submitted:
                self._submitted.append(ticket.job_id)
        if not ticket.joined:
            if self.visibility == "pending" and self.on_write is not None:
                self.on_write(job, record)
            self._emit("acknowledged", job, {"state": "pending", "visibility": self.visibility})
        handle = AdmissionTicket(
            job_id=ticket.job_id, candidate_id=candidate_id, visibility=self.visibility
        )
        handle._owner = self
        return handle

    def resubmit(self, job_id: str) -> AdmissionTicket:
        """Queue a failed write again (its record kept the job: nothing acknowledged is lost).

        Args:
            job_id: The failed job.

        Returns:
            The new job's ticket.

        Raises:
            KeyError: Unknown job id.
            ValueError: The job did not fail (or was recorded before jobs were kept).
        """
        record = self.record(job_id)
        job = record.job
        if record.state != "failed" or job is None:
            raise ValueError(f"job {job_id} is {record.state}, not a failed job with its write")
        return self.submit(
            job.candidate, job.context, candidate_id=job.candidate_id, payload=job.payload
        )

    def failed(self) -> list[AdmissionRecord]:
        """Every failed record of this gate's namespace, oldest first (with its job)."""
        return self.records_store.failed()

    # -- worker side ---------------------------------------------------------------
    def run(self, job: AdmissionJob) -> AuditOutcome:
        """Decide ``job`` and apply the decision (the worker's entry point; idempotent).

        Args:
            job: The acknowledged job (with the queue's ``job_id``).

        Returns:
            ``done``, or ``retry`` when the provider is away.
        """
        known = self.records_store.get(job.job_id)
        if known is not None and known[0].state != "pending":
            record, applied = known
            if applied:
                return AuditOutcome("done")  # a repeat delivery
        else:
            started = time.perf_counter()
            try:
                decision = self.admitter.decide(
                    job.candidate, job.context, candidate_id=job.candidate_id
                )
            except AdmissionFailedError as exc:  # an admitter with on_error="raise"
                decision = exc.decision
            except InvalidCandidateError as exc:  # queued before validation (or by hand)
                record = self._invalid(job, exc)
                self.records_store.put(record, job.memory_id, applied=False)
                return self._apply(job, record)
            if _outage(decision):
                reason = f"provider unavailable: {_error_text(decision)}"
                self._emit("retrying", job, {"state": "pending", "error": reason[:500]})
                return AuditOutcome("retry", reason)
            record = self._record(job, decision, time.perf_counter() - started)
            self.records_store.put(record, job.memory_id, applied=False)
        return self._apply(job, record)

    def _invalid(self, job: AdmissionJob, exc: InvalidCandidateError) -> AdmissionRecord:
        """A job whose input fails validation: failed, never admitted, whatever on_error."""
        return AdmissionRecord(
            job_id=job.job_id,
            candidate_id=job.candidate_id,
            state="failed",
            acknowledged_at=job.submitted_at,
            decided_at=time.time(),
            error=f"invalid input: {exc}"[:500],
            job=job,
        )

    def _apply(self, job: AdmissionJob, record: AdmissionRecord) -> AuditOutcome:
        """Run the store callback of a recorded decision, mark it applied, report it."""
        callback = self.on_store if record.state == "stored" else self.on_reject
        if callback is not None:
            callback(job, record)  # raising: the job retries (transient) or dies
        self.records_store.put(record, job.memory_id, applied=True)
        kind: Literal["decided", "failed"] = "failed" if record.error else "decided"
        self._emit(kind, job, _event_payload(record))
        if record.error is not None:
            self._failed(job, record)
        return AuditOutcome("done")

    def _failed(self, job: AdmissionJob, record: AdmissionRecord) -> None:
        if self.on_failure is None:
            return
        try:
            self.on_failure(job, record)
        except Exception:
            logger.exception("background admission on_failure failed for job %s", job.job_id)

    def dead(self, job: AdmissionJob, reason: str) -> AdmissionRecord:
        """Record a dead-lettered job as ``failed`` and apply ``on_error``.

        Args:
            job: The job.
            reason: Why it went to the dead letters.

        Returns:
            The final record.
        """
        known = self.records_store.get(job.job_id)
        base = known[0] if known is not None else None
        state: State = "stored" if self.on_error == "admit" else "failed"
        record = AdmissionRecord(
            job_id=job.job_id,
            candidate_id=job.candidate_id,
            state=state,
            decision=base.decision if base is not None else None,
            explanation=base.explanation if base is not None else "",
            model_calls=base.model_calls if base is not None else 0,
            acknowledged_at=job.submitted_at,
            decided_at=time.time(),
            error=reason[:500],
            job=job if state == "failed" else None,
        )
        callback = self.on_store if state == "stored" else self.on_reject
        applied = True
        try:
            if callback is not None:
                callback(job, record)
        except Exception:
            applied = False
            logger.exception("background admission callback failed for job %s", job.job_id)
        self.records_store.put(record, job.memory_id, applied=applied)
        self._emit("failed", job, _event_payload(record))
        self._failed(job, record)
        return record

    def _record(
        self, job: AdmissionJob, decision: AdmissionDecision, seconds: float
    ) -> AdmissionRecord:
        error = None
        if decision.error is not None:
            error = f"{decision.error.stage}: {decision.error.message}"
        state: State
        if decision.ok:
            state = "stored" if decision.store else "rejected"
        else:
            state = "stored" if self.on_error == "admit" else "failed"
        return AdmissionRecord(
            job_id=job.job_id,
            candidate_id=job.candidate_id,
            state=state,
            decision=decision.summary(),
            explanation=decision.explanation,
            model_calls=decision.cost.model_calls,
            wall_seconds=seconds,
            acknowledged_at=job.submitted_at,
            decided_at=time.time(),
            error=error,
            job=job if state == "failed" else None,
        )

    # -- lookups -------------------------------------------------------------------
    def record(self, job_id: str) -> AdmissionRecord:
        """The job's record (``pending`` until decided), from the durable records.

        Args:
            job_id: The ticket's job id.

        Returns:
            The record.

        Raises:
            KeyError: Unknown job id.
        """
        known = self.records_store.get(job_id)
        if known is None:
            raise KeyError(job_id)
        return self._visible(*known)

    def _visible(self, record: AdmissionRecord, applied: bool) -> AdmissionRecord:
        """What the application sees: ``pending`` until the store callback returned."""
        if record.state != "pending" and not applied:
            return record.model_copy(update={"state": "pending"})
        if record.state == "pending":
            return self._lost(record)
        return record

    def _lost(self, record: AdmissionRecord) -> AdmissionRecord:
        """A pending record whose job was dead-lettered by a claim (it killed workers)."""
        get = getattr(self.jobs, "get", None)
        if get is None:
            return record
        try:
            job = get(record.job_id)
        except KeyError:
            return record
        if job.state != "dead":
            return record
        return record.model_copy(update={"state": "failed", "error": job.dead_reason})

    def records(self) -> list[AdmissionRecord]:
        """The records of the jobs this instance submitted, in submission order."""
        with self._lock:
            ids = list(self._submitted)
        found = self.records_store.many(ids)
        return [self._visible(*found[i]) for i in ids if i in found]

    def wait(self, job_id: str, timeout: float | None = None) -> AdmissionRecord:
        """The job's record once decided (or still pending after ``timeout``).

        Args:
            job_id: The ticket's job id.
            timeout: Seconds to wait at most (None: no bound).

        Returns:
            The record.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            record = self.record(job_id)
            if record.state != "pending" or (deadline is not None and time.monotonic() > deadline):
                return record
            time.sleep(0.02)

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until no job this instance submitted is pending.

        Args:
            timeout: Seconds to wait at most (None: no bound).

        Returns:
            Whether every job was decided in time.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            records = self.records()
            if all(r.state != "pending" for r in records):
                return True
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.02)

    def close(self, wait: bool = True) -> None:
        """Stop this instance's worker threads (and close a queue it opened).

        Args:
            wait: Let the decision in progress finish first (else a later worker takes it
                over after its lease).
        """
        if self._pool is not None:
            self._pool.stop(timeout=None if wait else 0.0)
            self._pool = None
        if self._own_jobs:
            self.jobs.close()

    def _emit(self, kind: Any, job: AdmissionJob, payload: dict[str, Any]) -> None:
        if self.listener is None:
            return
        event = BackgroundAdmissionEvent(
            kind=kind, job_id=job.job_id, candidate_id=job.candidate_id, payload=payload
        )
        try:
            result = self.listener(event)
            if inspect.iscoroutine(result):
                result.close()
                logger.warning("async listener ignored: background admission emits from threads")
        except Exception:
            logger.exception("background admission listener failed on %s", kind)


class _Handler:
    """The ``admission`` job handler of one :class:`BackgroundAdmission`."""

    def __init__(self, owner: BackgroundAdmission) -> None:
        self.owner = owner

    def __call__(self, payload: str, job_id: str) -> AuditOutcome:
        return self.owner.run(AdmissionJob.loads(payload, job_id))

    def dead(self, payload: str, job_id: str, reason: str) -> None:
        self.owner.dead(AdmissionJob.loads(payload, job_id), reason)


def _outage(decision: AdmissionDecision) -> bool:
    """The decision failed because the provider was away (transient model errors)."""
    error = decision.error
    return error is not None and any(f.transient for f in error.failures)


def _error_text(decision: AdmissionDecision) -> str:
    error = decision.error
    return "" if error is None else f"{error.stage}: {error.message}"


def _event_payload(record: AdmissionRecord) -> dict[str, Any]:
    return {
        "state": record.state,
        "decision": record.decision,
        "model_calls": record.model_calls,
        "wall_seconds": record.wall_seconds,
        "error": record.error,
    }
