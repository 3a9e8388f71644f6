"""A claimed job and a worker's name: what a worker and the job table share.

Its own module so that :mod:`.worker` needs nothing of :mod:`.store` at run time (the
store starts workers; a worker is handed a store), and the two import no circle.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass

from .kinds import AUDIT

__all__ = ["ClaimedJob", "default_worker_name"]


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
