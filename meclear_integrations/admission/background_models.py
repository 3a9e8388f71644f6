"""The records of background admission: job, ticket, decision record, lifecycle event."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .errors import AdmissionError

__all__ = [
    "AdmissionJob",
    "AdmissionRecord",
    "AdmissionTicket",
    "BackgroundAdmissionEvent",
    "BackgroundAdmissionFailedError",
    "State",
    "Visibility",
]

Visibility = Literal["hidden", "pending"]
State = Literal["pending", "stored", "rejected", "failed"]


class AdmissionJob(BaseModel):
    """What a worker needs to decide one candidate (JSON-serialisable, for a job table)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    job_id: str = ""
    """The queue's id of the job (filled in when a worker runs it; not in the payload)."""
    candidate: str
    """The candidate memory."""
    context: str
    """Its historical context, rendered as text."""
    candidate_id: str | None = None
    """The caller's id."""
    memory_id: str
    """The memory's id in the store: the caller's id, else the candidate's content hash,
    so a decision applied twice writes the same memory once (idempotent store)."""
    payload: dict[str, Any] = Field(default_factory=dict)
    """What the caller needs to write the memory later (e.g. document metadata)."""
    submitted_at: float
    """Epoch seconds of the acknowledgement."""

    def dumps(self) -> str:
        """The job's payload for the queue (everything but the queue's own id)."""
        return json.dumps(self.model_dump(exclude={"job_id"}), default=str, sort_keys=True)

    @classmethod
    def loads(cls, payload: str, job_id: str) -> AdmissionJob:
        """The job stored as ``payload`` under ``job_id``.

        Args:
            payload: :meth:`dumps` output.
            job_id: The queue's id.

        Returns:
            The job.
        """
        return cls.model_validate({**json.loads(payload), "job_id": job_id})


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

    _owner: Any = PrivateAttr(default=None)

    def _gate(self) -> Any:
        if self._owner is None:
            raise RuntimeError("this ticket was not returned by a gate: use gate.record(job_id)")
        return self._owner

    def done(self) -> bool:
        """Whether the decision is applied (stored, rejected or failed)."""
        return bool(self._gate().record(self.job_id).state != "pending")

    def result(self, timeout: float | None = None) -> AdmissionRecord:
        """The decided record; a failed decision raises (never only found by polling).

        Args:
            timeout: Seconds to wait at most (None: no bound).

        Returns:
            The ``stored`` or ``rejected`` record.

        Raises:
            BackgroundAdmissionFailedError: The decision failed (``record`` holds the job,
                so ``gate.resubmit(job_id)`` can queue it again), also when
                ``on_error="admit"`` stored it anyway.
            TimeoutError: Still pending after ``timeout``.
        """
        record: AdmissionRecord = self._gate().wait(self.job_id, timeout)
        if record.state == "pending":
            raise TimeoutError(f"admission job {self.job_id} still pending after {timeout}s")
        if record.error is not None:
            raise BackgroundAdmissionFailedError(record)
        return record


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
    job: AdmissionJob | None = None
    """The acknowledged write itself (candidate, context, payload), kept on a failed
    record so nothing acknowledged is lost: ``BackgroundAdmission.resubmit(job_id)``."""


class BackgroundAdmissionEvent(BaseModel):
    """One lifecycle step of a background admission (no memory or context text)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["acknowledged", "decided", "failed", "retrying"]
    """``acknowledged`` at submit; ``retrying`` when the provider is away (the job backs
    off); ``decided`` or ``failed`` when the worker is done."""
    job_id: str
    """The job."""
    candidate_id: str | None
    """The caller's id."""
    payload: dict[str, Any] = Field(default_factory=dict)
    """State, decision summary and cost."""


class BackgroundAdmissionFailedError(AdmissionError):
    """A background decision failed (``record.state == "failed"``); the write was kept.

    Raised by :meth:`AdmissionTicket.result`; the job (candidate, context, payload) stays
    in the durable record so :meth:`BackgroundAdmission.resubmit` can queue it again.

    Args:
        record: The failed record.
    """

    def __init__(self, record: AdmissionRecord) -> None:
        super().__init__(
            f"background admission failed for job {record.job_id} "
            f"(candidate {record.candidate_id!r}): {record.error}"
        )
        self.record = record
