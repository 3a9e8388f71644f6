"""Admission off the write path: acknowledge a write at once, decide in the background.

:class:`BackgroundAdmission` takes a candidate, records it as ``pending`` and returns an
:class:`AdmissionTicket` with no model call; a worker of its :class:`AdmissionExecutor`
runs the ordinary ConMem decision later and records the decision, its reasons and its cost
(:class:`AdmissionRecord`), emitting :class:`BackgroundAdmissionEvent` s (``acknowledged``,
``decided``, ``failed``). The synchronous path (:meth:`ConMemAdmitter.decide`) stays.

Where a pending candidate lives (``visibility``) is a documented choice:

- ``"hidden"`` (default): a pending candidate is **not retrievable until admitted**. The
  store sees it only when the decision is ``store`` (``on_store`` writes it); a rejected
  or failed one never reaches retrieval. Safe: a misaligned memory is never read.
- ``"pending"``: the candidate is written at once, **retrievable and marked pending**
  (``on_write`` writes it with ``admission_status="pending"``); ``on_store`` marks it
  admitted and ``on_reject`` removes it. Fresh memories are usable at once, at the price
  of a window in which a misaligned one can be read (and a store able to update/delete).

Executors: :class:`ThreadExecutor` (the in-process default: a bounded pool of threads in
this process; pending work is lost if the process dies). Durable delivery plugs in through
the same :class:`AdmissionExecutor` protocol (``submit(job_id, work)``): a job table
keeps the :class:`AdmissionJob` (JSON) and a worker calls :meth:`BackgroundAdmission.run`
with it.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from .decision import AdmissionDecision
from .engine import ConMemAdmitter
from .hook import OnError
from .prompts import Context, render_context

__all__ = [
    "AdmissionExecutor",
    "AdmissionJob",
    "AdmissionRecord",
    "AdmissionTicket",
    "BackgroundAdmission",
    "BackgroundAdmissionEvent",
    "ThreadExecutor",
    "Visibility",
]

logger = logging.getLogger(__name__)

Visibility = Literal["hidden", "pending"]
State = Literal["pending", "stored", "rejected", "failed"]


class AdmissionJob(BaseModel):
    """What a worker needs to decide one candidate (JSON-serialisable, for a job table)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    job_id: str
    """Unique id of the job."""
    candidate: str
    """The candidate memory."""
    context: str
    """Its historical context, rendered as text."""
    candidate_id: str | None = None
    """The caller's id."""
    payload: dict[str, Any] = Field(default_factory=dict)
    """What the caller needs to write the memory later (e.g. document metadata)."""
    submitted_at: float
    """Epoch seconds of the acknowledgement."""


class AdmissionTicket(BaseModel):
    """The immediate acknowledgement of a background write."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    job_id: str
    """Where to look the decision up."""
    candidate_id: str | None
    """The caller's id."""
    status: Literal["pending"] = "pending"
    """Always ``pending``: nothing is decided yet."""
    visibility: Visibility
    """``hidden``: not retrievable until admitted; ``pending``: retrievable, marked."""
    model_calls: int = 0
    """Model calls made before acknowledging: always 0."""


class AdmissionRecord(BaseModel):
    """The decision of one background job, with its reasons and cost."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    """The job."""
    candidate_id: str | None
    """The caller's id."""
    state: State
    """``pending``, ``stored``, ``rejected`` or ``failed`` (a stage failed: ``on_error``)."""
    decision: dict[str, Any] | None = None
    """:meth:`AdmissionDecision.summary` (decision, CMTE, reason type, model calls...)."""
    explanation: str = ""
    """The admission explanation (probe labels, auditor reasons, tie-break)."""
    model_calls: int = 0
    """Model calls of the decision."""
    wall_seconds: float = 0.0
    """Time the decision took in the worker."""
    acknowledged_at: float
    """Epoch seconds of the acknowledgement."""
    decided_at: float | None = None
    """Epoch seconds of the decision."""
    error: str | None = None
    """A failed stage, or an exception raised by a write callback."""


class BackgroundAdmissionEvent(BaseModel):
    """One lifecycle step of a background admission (no memory or context text)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["acknowledged", "decided", "failed"]
    """``acknowledged`` at submit; ``decided`` or ``failed`` when the worker is done."""
    job_id: str
    """The job."""
    candidate_id: str | None
    """The caller's id."""
    payload: dict[str, Any] = Field(default_factory=dict)
    """State, decision summary and cost."""


class AdmissionExecutor(Protocol):
    """Runs background admission work (the in-process default, or a durable job queue)."""

    def submit(self, job_id: str, work: Callable[[], None]) -> None:
        """Run ``work`` eventually, at least once."""
        ...


class ThreadExecutor:
    """The in-process default: ``max_workers`` threads of this process (not durable).

    Args:
        max_workers: Decisions running at once.
    """

    def __init__(self, max_workers: int = 2) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self._pool = ThreadPoolExecutor(max_workers, thread_name_prefix="meclear-admission")
        self._futures: dict[str, Future[None]] = {}
        self._lock = threading.Lock()

    def submit(self, job_id: str, work: Callable[[], None]) -> None:
        """Queue ``work`` on the pool.

        Args:
            job_id: The job's id.
            work: The decision to run.
        """
        future = self._pool.submit(work)
        with self._lock:
            self._futures[job_id] = future
        future.add_done_callback(lambda _f: self._forget(job_id))

    def _forget(self, job_id: str) -> None:
        with self._lock:
            self._futures.pop(job_id, None)

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every submitted decision ran.

        Args:
            timeout: Seconds to wait at most (None: no bound).

        Returns:
            Whether everything finished in time.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                pending = list(self._futures.values())
            if not pending:
                return True
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            for f in pending:
                try:
                    f.result(timeout=left)
                except TimeoutError:
                    return False
                except Exception:  # the work records its own errors
                    continue

    def shutdown(self, wait: bool = True) -> None:
        """Stop the pool.

        Args:
            wait: Wait for queued decisions to finish.
        """
        self._pool.shutdown(wait=wait, cancel_futures=not wait)


Callback = Callable[[AdmissionJob, AdmissionRecord], None]


class BackgroundAdmission:
    """Acknowledge at once, decide in the background (module docstring).

    Args:
        admitter: The ConMem engine (its model makes every call, in the worker).
        executor: Where decisions run (default: :class:`ThreadExecutor` with 2 threads).
        visibility: ``hidden`` (not retrievable until admitted) or ``pending``
            (retrievable, marked pending; needs ``on_write`` and ``on_reject``).
        on_write: ``pending`` visibility: writes the candidate at submit, marked pending.
        on_store: Called once the decision is ``store`` (hidden: write it now; pending:
            mark it admitted).
        on_reject: Called once the decision is ``do_not_store`` or failed under
            ``on_error="reject"`` (pending: remove it).
        listener: Receives every :class:`BackgroundAdmissionEvent`.
        on_error: What a failed decision does: ``admit`` stores it; ``reject`` and
            ``raise`` (nothing to raise to in a worker) record it as ``failed`` and keep it
            out of the store (``on_reject`` is called).

    Example:
        >>> from meclear_integrations.admission import ConMemAdmitter
        >>> from meclear_integrations.admission.background import BackgroundAdmission
        >>> from meclear_integrations.admission.scripted import ScriptedAdmissionModel
        >>> stored = []
        >>> gate = BackgroundAdmission(
        ...     ConMemAdmitter(ScriptedAdmissionModel()),
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
        executor: AdmissionExecutor | None = None,
        visibility: Visibility = "hidden",
        on_write: Callback | None = None,
        on_store: Callback | None = None,
        on_reject: Callback | None = None,
        listener: Callable[[BackgroundAdmissionEvent], Awaitable[None] | None] | None = None,
        on_error: OnError = "reject",
    ) -> None:
        if visibility not in ("hidden", "pending"):
            raise ValueError(f"visibility must be 'hidden' or 'pending', not {visibility!r}")
        if visibility == "pending" and (on_write is None or on_reject is None):
            raise ValueError(
                "visibility='pending' writes candidates at once: give on_write (write it "
                "marked pending) and on_reject (remove it when rejected)"
            )
        self.admitter = admitter
        self._own_executor = executor is None
        self.executor: AdmissionExecutor = executor if executor is not None else ThreadExecutor()
        self.visibility: Visibility = visibility
        self.on_write, self.on_store, self.on_reject = on_write, on_store, on_reject
        self.listener = listener
        self.on_error: OnError = on_error
        self._records: dict[str, AdmissionRecord] = {}
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)

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
            candidate_id: The caller's id.
            payload: What ``on_store`` / ``on_write`` need to write it (kept in the job).

        Returns:
            The ticket (``pending``).
        """
        job = AdmissionJob(
            job_id=uuid.uuid4().hex,
            candidate=candidate,
            context=render_context(context),
            candidate_id=candidate_id,
            payload=dict(payload or {}),
            submitted_at=time.time(),
        )
        record = AdmissionRecord(
            job_id=job.job_id,
            candidate_id=candidate_id,
            state="pending",
            acknowledged_at=job.submitted_at,
        )
        with self._lock:
            self._records[job.job_id] = record
        if self.visibility == "pending" and self.on_write is not None:
            self.on_write(job, record)
        self._emit("acknowledged", job, {"state": "pending", "visibility": self.visibility})

        def work() -> None:
            self.run(job)

        self.executor.submit(job.job_id, work)
        return AdmissionTicket(
            job_id=job.job_id, candidate_id=candidate_id, visibility=self.visibility
        )

    # -- worker side ---------------------------------------------------------------
    def run(self, job: AdmissionJob) -> AdmissionRecord:
        """Decide ``job`` (the worker's entry point; a durable queue calls it too).

        Args:
            job: The acknowledged job.

        Returns:
            The record with the decision, reasons and cost.
        """
        started = time.perf_counter()
        decision: AdmissionDecision | None = None
        error: str | None = None
        try:
            decision = self.admitter.decide(
                job.candidate, job.context, candidate_id=job.candidate_id
            )
        except Exception as exc:  # the engine does not raise for model misbehaviour
            error = f"{type(exc).__name__}: {exc}"[:500]
        if decision is not None and decision.error is not None:
            error = f"{decision.error.stage}: {decision.error.message}"
        state: State
        if decision is not None and decision.ok:
            state = "stored" if decision.store else "rejected"
        else:
            state = "stored" if self.on_error == "admit" else "failed"
        record = AdmissionRecord(
            job_id=job.job_id,
            candidate_id=job.candidate_id,
            state=state,
            decision=decision.summary() if decision is not None else None,
            explanation=decision.explanation if decision is not None else "",
            model_calls=decision.cost.model_calls if decision is not None else 0,
            wall_seconds=time.perf_counter() - started,
            acknowledged_at=job.submitted_at,
            decided_at=time.time(),
            error=error,
        )
        try:
            callback = self.on_store if state == "stored" else self.on_reject
            if callback is not None:
                callback(job, record)
        except Exception as exc:
            record = record.model_copy(
                update={"error": f"write callback failed: {type(exc).__name__}: {exc}"[:500]}
            )
            logger.exception("background admission callback failed for job %s", job.job_id)
        with self._done:
            self._records[job.job_id] = record
            self._done.notify_all()
        kind: Literal["decided", "failed"] = "failed" if record.error else "decided"
        self._emit(
            kind,
            job,
            {
                "state": record.state,
                "decision": record.decision,
                "model_calls": record.model_calls,
                "wall_seconds": record.wall_seconds,
                "error": record.error,
            },
        )
        return record

    # -- lookups -------------------------------------------------------------------
    def record(self, job_id: str) -> AdmissionRecord:
        """The job's record (``pending`` until decided).

        Args:
            job_id: The ticket's job id.

        Returns:
            The record.

        Raises:
            KeyError: Unknown job id.
        """
        with self._lock:
            return self._records[job_id]

    def records(self) -> list[AdmissionRecord]:
        """Every record, in submission order.

        Returns:
            The records.
        """
        with self._lock:
            return list(self._records.values())

    def wait(self, job_id: str, timeout: float | None = None) -> AdmissionRecord:
        """The job's record once decided (or still pending after ``timeout``).

        Args:
            job_id: The ticket's job id.
            timeout: Seconds to wait at most (None: no bound).

        Returns:
            The record.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._done:
            while self._records[job_id].state == "pending":
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._done.wait(left)
            return self._records[job_id]

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until no job is pending.

        Args:
            timeout: Seconds to wait at most (None: no bound).

        Returns:
            Whether every job was decided in time.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._done:
            while any(r.state == "pending" for r in self._records.values()):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._done.wait(left)
        return True

    def close(self, wait: bool = True) -> None:
        """Stop the default executor (a given executor is the caller's to stop).

        Args:
            wait: Let queued decisions finish first.
        """
        if self._own_executor and isinstance(self.executor, ThreadExecutor):
            self.executor.shutdown(wait=wait)

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
