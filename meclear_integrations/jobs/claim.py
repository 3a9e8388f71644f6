"""A claimed job, a worker's name and the table a worker calls: what the two share.

Its own module so that :mod:`.worker` needs nothing of :mod:`.store` (the store starts
workers; a worker is handed a :class:`JobTable`, which :class:`~.store.JobStore` is), and
the two import no circle.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from typing import Protocol

from .kinds import AUDIT

__all__ = ["ClaimedJob", "JobTable", "default_worker_name"]


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """A job a worker holds under a lease."""

    job_id: str
    payload: str
    attempts: int
    max_attempts: int
    lease_until: float
    kind: str = AUDIT
    fence: int = 0
    """The claim's fencing token: the job's final write is refused once another claim
    took it over (``JobStore.complete`` / ``retry`` / ``dead``)."""


def default_worker_name() -> str:
    """``host:pid:short-uuid``, unique per worker thread."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class JobTable(Protocol):
    """What a worker calls on the job table (:class:`~.store.JobStore` is one)."""

    def claim(
        self, worker: str, *, lease_seconds: float, kinds: tuple[str, ...] | None = None
    ) -> ClaimedJob | None:
        """Claim the next due job under a lease (None: nothing due)."""
        ...

    def heartbeat(
        self, job_id: str, worker: str, *, lease_seconds: float, fence: int | None = None
    ) -> bool:
        """Extend the lease of a job this worker holds (False: no longer its)."""
        ...

    def complete(self, job_id: str, *, ledger_run_id: str | None, fence: int | None = None) -> bool:
        """Mark the job done (False: refused, the claim was taken over)."""
        ...

    def retry(self, job_id: str, *, delay: float, error: str, fence: int | None = None) -> bool:
        """Put the job back, due after ``delay`` seconds (False: refused)."""
        ...

    def dead(self, job_id: str, *, reason: str, fence: int | None = None) -> bool:
        """Dead-letter the job with ``reason`` (False: refused)."""
        ...
