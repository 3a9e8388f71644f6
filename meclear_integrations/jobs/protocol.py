"""What the request path, the queues and the workers agree on (no database imports)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .snapshot import AuditSnapshot

__all__ = ["AuditOutcome", "AuditQueue", "AuditTicket", "Auditor"]


@dataclass(frozen=True, slots=True)
class AuditTicket:
    """What the request path learns when it submits an audit."""

    job_id: str
    joined: bool
    """The question joined an audit already pending (single flight)."""
    backend: str = "sqlite"

    def metadata(self) -> dict[str, Any]:
        """The ``audit`` entry of each returned item's metadata."""
        return {"job_id": self.job_id, "joined": self.joined, "backend": self.backend}


class AuditQueue(Protocol):
    """Where background queries put their audits (``JobStore``, ``ProcrastinateQueue``)."""

    def submit(self, snapshot: AuditSnapshot) -> AuditTicket:
        """Queue an audit, or join the pending one for the same question and context."""
        ...


@dataclass(frozen=True, slots=True)
class AuditOutcome:
    """What one audit attempt ended with.

    ``done``: the ledger holds the verified result (``ledger_run_id``). ``retry``: the
    provider or the ledger is away; try again after a backoff. ``dead``: the payload cannot
    run; dead letter with ``reason``.
    """

    state: Literal["done", "retry", "dead"]
    reason: str | None = None
    ledger_run_id: str | None = None


class Auditor(Protocol):
    """What runs an audit: the component that enqueued it (its ``audit`` method)."""

    def audit(self, snapshot: AuditSnapshot, *, run_id: str) -> AuditOutcome:
        """Clear ``snapshot`` with verification and record it under ``run_id``."""
        ...
