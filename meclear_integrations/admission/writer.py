"""The framework-free half of the LangChain and LlamaIndex background admission writers.

Both integrations guard a memory store the same way; only how a memory is written to and
removed from the store differs. :class:`AdmissionWriter` holds everything else once: the
candidate's context (its metadata key, else the call's context), the memory id (the
caller's id, else the candidate's content hash: the idempotency key of the store), the
status entry written into the stored memory's metadata, the durable
:class:`~.background.BackgroundAdmission` and its status queries. An integration gives a
:class:`MemorySink` (``upsert`` by id, ``remove`` by id) and converts its documents or
nodes to :class:`Candidate` s.

Status entries (``metadata[metadata_key]``): ``{"status": "pending", "job_id"}`` while
pending (``visibility="pending"`` only); ``{"status": "admitted", "job_id", ...decision
summary}`` once admitted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..core.errors import ConfigurationError
from ..jobs.kinds import JobHandler
from ..runtime.hashing import content_hash
from .background import BackgroundAdmission
from .background_models import (
    AdmissionJob,
    AdmissionRecord,
    AdmissionTicket,
    BackgroundAdmissionEvent,
    Visibility,
)
from .engine import ConMemAdmitter
from .hook import OnError
from .prompts import Context
from .validation import validate_write

__all__ = ["AdmissionWriter", "Candidate", "MemorySink"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One memory an application wants to write, in framework-free form."""

    content: str
    """The text the admission decides on."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Its metadata (the context key is taken out)."""
    id: str | None = None
    """The caller's id (None: the content hash)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """What the sink needs to rebuild it in a worker (JSON-serialisable)."""


class MemorySink(Protocol):
    """How an integration writes to its store (by id, so a repeat is an upsert)."""

    def upsert(self, memory_id: str, job: AdmissionJob, status: dict[str, Any]) -> None:
        """Write the memory of ``job`` under ``memory_id`` with ``status`` in its metadata."""
        ...

    def remove(self, memory_id: str) -> None:
        """Remove the memory (a pending one that was rejected)."""
        ...


class AdmissionWriter:
    """Acknowledge writes at once; store admitted memories through a :class:`MemorySink`.

    Args:
        sink: The integration's store adapter.
        admitter: The ConMem engine (its model makes every call, in a worker).
        visibility: ``hidden`` (not retrievable until admitted) or ``pending``
            (retrievable at once, marked pending; rejected memories are removed).
        jobs: The durable queue (``JobStore``, ``ProcrastinateQueue``, a database URL or
            path; None: the ledger's default SQLite file).
        workers: In-process worker threads (0: ``meclear worker`` processes run the jobs).
        context_key: The metadata key holding a candidate's historical context.
        metadata_key: The metadata key of the admission status on stored memories.
        on_error: ``admit`` stores a memory whose decision failed; ``reject`` / ``raise``
            keep it out.
        listener: Receives every acknowledged / retrying / decided / failed event.
        on_failure: Called with ``(job, record)`` when a decision fails (the record keeps
            the job: :meth:`resubmit`).
    """

    def __init__(
        self,
        sink: MemorySink,
        admitter: ConMemAdmitter,
        *,
        visibility: Visibility = "hidden",
        jobs: Any = None,
        workers: int = 2,
        context_key: str = "historical_context",
        metadata_key: str = "meclear_admission",
        on_error: OnError = "reject",
        listener: Callable[[BackgroundAdmissionEvent], Any] | None = None,
        on_failure: Callable[[AdmissionJob, AdmissionRecord], None] | None = None,
    ) -> None:
        self.sink = sink
        self.context_key = context_key
        self.metadata_key = metadata_key
        self.background = BackgroundAdmission(
            admitter,
            jobs=jobs,
            workers=workers,
            visibility=visibility,
            on_write=self._write_pending,
            on_store=self._admit,
            on_reject=self._reject,
            listener=listener,
            on_error=on_error,
            on_failure=on_failure,
        )

    # -- store callbacks (run in the worker) ---------------------------------------
    def _write_pending(self, job: AdmissionJob, record: AdmissionRecord) -> None:
        self.sink.upsert(job.memory_id, job, {"status": "pending", "job_id": job.job_id})

    def _admit(self, job: AdmissionJob, record: AdmissionRecord) -> None:
        status = {"status": "admitted", "job_id": job.job_id, **(record.decision or {})}
        self.sink.upsert(job.memory_id, job, status)

    def _reject(self, job: AdmissionJob, record: AdmissionRecord) -> None:
        if self.background.visibility == "pending":
            self.sink.remove(job.memory_id)

    # -- API -----------------------------------------------------------------------
    def submit_candidates(
        self,
        candidates: Iterable[Candidate],
        *,
        context: Context | None = None,
        noun: str,
        content_field: str = "content",
    ) -> list[AdmissionTicket]:
        """Acknowledge every candidate now (no model call); decide and write in a job.

        Args:
            candidates: The candidates (their context under ``metadata[context_key]``,
                else ``context``).
            context: The historical context of candidates without their own.
            noun: What the integration calls a candidate (for errors).
            content_field: What the integration calls a candidate's text (for errors).

        Returns:
            One ``pending`` ticket per candidate, in order.

        Raises:
            ConfigurationError: A candidate has no context and none was given.
            InvalidCandidateError: A candidate is empty, not text, too long or malformed
                (the error's ``field`` names it, e.g. ``document[2].page_content``);
                nothing of the batch is queued and no model call is made.
        """
        items = list(candidates)
        admitter = self.background.admitter
        for i, item in enumerate(items):  # check every one before queueing any
            own = self.context_key in item.metadata
            ctx = item.metadata.get(self.context_key, context)
            if ctx is None:
                raise ConfigurationError(
                    f"{noun} {i} has no metadata[{self.context_key!r}] and no context"
                )
            validate_write(
                item.content,
                ctx,
                max_candidate_chars=admitter.config.max_candidate_chars,
                max_context_chars=admitter.config.max_context_chars,
                prefix=f"{noun}[{i}]",
                candidate_field=content_field,
                context_field=f"metadata[{self.context_key!r}]" if own else "context",
            )
        tickets = []
        for item in items:
            ctx = item.metadata.get(self.context_key, context)
            memory_id = item.id or content_hash(item.content)
            metadata = {k: v for k, v in item.metadata.items() if k != self.context_key}
            tickets.append(
                self.background.submit(
                    item.content,
                    ctx,  # type: ignore[arg-type]  # checked above
                    candidate_id=memory_id,
                    payload={"id": memory_id, "metadata": metadata, **item.extra},
                )
            )
        return tickets

    def resubmit(self, job_id: str) -> AdmissionTicket:
        """Queue a failed write again (:meth:`BackgroundAdmission.resubmit`).

        Args:
            job_id: The failed job.

        Returns:
            The new job's ticket.
        """
        return self.background.resubmit(job_id)

    def failed(self) -> list[AdmissionRecord]:
        """Every failed record of this writer's namespace, with its job."""
        return self.background.failed()

    def job_handlers(self) -> dict[str, JobHandler]:
        """The job kinds ``meclear worker --component`` runs for this writer."""
        return self.background.job_handlers()

    @property
    def job_queue(self) -> Any:
        """The durable queue of this writer's jobs."""
        return self.background.jobs

    def record(self, job_id: str) -> AdmissionRecord:
        """The job's durable record (``pending`` until decided).

        Args:
            job_id: A ticket's job id.

        Returns:
            The record.
        """
        return self.background.record(job_id)

    def wait(self, job_id: str, timeout: float | None = None) -> AdmissionRecord:
        """The job's record once decided (or still pending after ``timeout``).

        Args:
            job_id: A ticket's job id.
            timeout: Seconds to wait at most (None: no bound).

        Returns:
            The record.
        """
        return self.background.wait(job_id, timeout)

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every candidate this writer queued is decided.

        Args:
            timeout: Seconds to wait at most (None: no bound).

        Returns:
            Whether every candidate was decided in time.
        """
        return self.background.drain(timeout)

    def close(self, wait: bool = True) -> None:
        """Stop the in-process workers (and close a queue this writer opened).

        Args:
            wait: Let the decision in progress finish first.
        """
        self.background.close(wait)
