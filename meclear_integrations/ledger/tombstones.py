"""Review decisions and tombstones: the ledger's audit trail of reviews written back.

A review proposal (``review``) is only a proposal. A person decides on it (accepted or
rejected: :func:`record_decision`, from the CLI, Python or an annotation in LangSmith,
Phoenix or Langfuse, ``writeback.annotations``) and an accepted decision is applied to the
memory store by ``meclear_integrations.writeback`` as a *soft delete*: the memory is taken
out of the store and kept whole in a tombstone (who, when, why, the evidence runs, the
memory itself), so that a restore puts it back byte for byte under its id.

Both tables are append-only (``schema``): a restore is a new ``restored`` row referring to
the tombstone it undoes. Tombstone events:

- ``retired``: the memory was taken out of the store; ``payload`` keeps it (its id, text,
  metadata: the store adapter's exact encoding). The payload is the one place the ledger
  keeps a memory's text unredacted: a restore must give back exactly what was removed.
- ``restored``: the memory was put back (the tombstone is closed).
- ``missing``: an accepted decision found the memory already gone from the store (deleted
  upstream): nothing was removed and nothing is lost; the decision is settled.
- ``failed``: the store refused the removal; the memory is still in the store and the
  tombstone is closed (``detail`` says why); the decision stays pending.

A decision is *pending* when it is the memory's latest decision, it accepts, and no
``missing`` event and no ``retired`` event (other than one closed as ``failed``) settled it
yet. A memory has an *active* tombstone when a
``retired`` event has no ``restored`` or ``failed`` event after it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import RowMapping, Table, select
from sqlalchemy.exc import IntegrityError

from ..core.errors import ConfigurationError
from . import schema as t
from .database import read_transaction, write_transaction
from .rows import safe_text

__all__ = [
    "Decision",
    "ReviewDecision",
    "Tombstone",
    "TombstoneEvent",
    "active_tombstone",
    "decisions",
    "open_tombstones",
    "pending_decisions",
    "record_decision",
    "record_event",
    "tombstone_events",
]

Decision = Literal["accepted", "rejected"]
"""A person's decision on a review proposal."""
TombstoneEvent = Literal["retired", "restored", "missing", "failed"]
"""What happened to a memory in the store (module docstring)."""
_SETTLING = ("retired", "missing")
_CLOSING = ("restored", "failed")


class ReviewDecision(BaseModel):
    """A person's decision on one memory's review proposal."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision_id: str
    """The decision's id (a UUID)."""
    namespace: str
    """The ledger namespace (one memory store)."""
    created_at: datetime
    """When it was recorded (UTC)."""
    memory_id: str
    """The memory's id in your store."""
    content_hash: str | None = None
    """SHA-256 of the text reviewed: applied only while the stored text still has it."""
    decision: Decision
    """``accepted`` (retire the memory) or ``rejected`` (keep it)."""
    actor: str | None = None
    """Who decided."""
    reason: str | None = None
    """Why (redacted)."""
    source: str
    """Where it was made: ``cli``, ``python``, ``langsmith``, ``phoenix``, ``langfuse``."""
    source_id: str | None = None
    """The annotation's id in that tool (recording the same one twice is a no-op)."""
    run_ids: list[str] = Field(default_factory=list)
    """The ledger runs holding the evidence."""
    query_ids: list[str] = Field(default_factory=list)
    """The questions it was proven harmful on."""


class Tombstone(BaseModel):
    """One event of a memory's retirement from the store (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tombstone_id: str
    """The tombstone's id (a UUID), shared by its ``retired`` and ``restored`` events."""
    namespace: str
    """The ledger namespace (one memory store)."""
    created_at: datetime
    """When it happened (UTC)."""
    memory_id: str
    """The memory's id in your store."""
    content_hash: str | None = None
    """SHA-256 of the memory's text when it was retired."""
    event: TombstoneEvent
    """``retired``, ``restored``, ``missing`` or ``failed``."""
    store: str
    """The store adapter's label (e.g. ``langchain:InMemoryVectorStore``)."""
    actor: str | None = None
    """Who applied (or restored) it."""
    reason: str | None = None
    """Why (the decision's reason, or the restore's)."""
    decision_id: str | None = None
    """The accepted decision it applies."""
    run_ids: list[str] = Field(default_factory=list)
    """The ledger runs holding the evidence."""
    payload: dict[str, Any] | None = None
    """The memory as the store adapter encoded it (``retired`` events only)."""
    detail: str | None = None
    """A note: the store's error of a ``failed`` event, what a ``missing`` one found."""


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _now(ledger: Any) -> datetime:
    clock = getattr(ledger, "_clock", None)
    return _utc(clock() if clock is not None else datetime.now(UTC))


def _decision(row: Any) -> ReviewDecision:
    fields = {k: v for k, v in dict(row).items() if k != "id"}
    fields["created_at"] = _utc(fields["created_at"])
    return ReviewDecision(**fields)


def _tombstone(row: Any) -> Tombstone:
    fields = {k: v for k, v in dict(row).items() if k != "id"}
    fields["created_at"] = _utc(fields["created_at"])
    return Tombstone(**fields)


def record_decision(
    ledger: Any,
    memory_id: str,
    *,
    decision: Decision,
    source: str,
    actor: str | None = None,
    reason: str | None = None,
    source_id: str | None = None,
    content_hash: str | None = None,
    run_ids: Sequence[str] = (),
    query_ids: Sequence[str] = (),
) -> ReviewDecision:
    """Append a person's decision on ``memory_id`` (idempotent per ``source_id``).

    Args:
        ledger: The ``HarmLedger``.
        memory_id: The memory's id in your store.
        decision: ``accepted`` or ``rejected``.
        source: Where it was made (``cli``, ``python``, ``langsmith``...).
        actor: Who decided.
        reason: Why (redacted before it is stored).
        source_id: The annotation's id in ``source``: a decision already recorded with the
            same source and id is returned as stored, nothing is written.
        content_hash: SHA-256 of the text reviewed.
        run_ids: The ledger runs holding the evidence.
        query_ids: The questions it was proven harmful on.

    Returns:
        The decision as recorded.

    Raises:
        ConfigurationError: ``memory_id`` is empty or ``decision`` is not one of the two.
    """
    if not memory_id:
        raise ConfigurationError("memory_id must be a non-empty string")
    if decision not in ("accepted", "rejected"):
        raise ConfigurationError(f"decision must be 'accepted' or 'rejected', not {decision!r}")
    row: dict[str, Any] = {
        "decision_id": str(uuid.uuid4()),
        "namespace": ledger.namespace,
        "created_at": _now(ledger),
        "memory_id": str(memory_id),
        "content_hash": content_hash,
        "decision": decision,
        "actor": safe_text(actor),
        "reason": safe_text(reason, 2000),
        "source": safe_text(source, 40) or "python",
        "source_id": safe_text(source_id),
        "run_ids": [str(r) for r in run_ids],
        "query_ids": [str(q) for q in query_ids],
    }
    if source_id is not None:
        stored = _by_source(ledger, row["source"], row["source_id"])
        if stored is not None:
            return stored
    try:
        with write_transaction(ledger.engine) as conn:
            conn.execute(t.review_decisions.insert().values(**row))
    except IntegrityError:
        stored = _by_source(ledger, row["source"], row["source_id"])
        if stored is None:
            raise
        return stored  # a concurrent import recorded the same annotation first
    return ReviewDecision(**row)


def _by_source(ledger: Any, source: str, source_id: str | None) -> ReviewDecision | None:
    d = t.review_decisions
    with read_transaction(ledger.engine) as conn:
        row = (
            conn.execute(
                select(d).where(
                    d.c.namespace == ledger.namespace,
                    d.c.source == source,
                    d.c.source_id == source_id,
                )
            )
            .mappings()
            .first()
        )
    return None if row is None else _decision(row)


def decisions(ledger: Any, memory_id: str | None = None) -> list[ReviewDecision]:
    """The recorded decisions, oldest first (of one memory, or all).

    Args:
        ledger: The ``HarmLedger``.
        memory_id: Only this memory's.

    Returns:
        The decisions.
    """
    return [_decision(r) for r in _rows(ledger, t.review_decisions, memory_id)]


def tombstone_events(ledger: Any, memory_id: str | None = None) -> list[Tombstone]:
    """The tombstone events, oldest first (of one memory, or all): the audit trail.

    Args:
        ledger: The ``HarmLedger``.
        memory_id: Only this memory's.

    Returns:
        The events.
    """
    return [_tombstone(r) for r in _rows(ledger, t.tombstones, memory_id)]


def _rows(ledger: Any, table: Table, memory_id: str | None) -> Sequence[RowMapping]:
    """The namespace's rows of an append-only table (of one memory, or all), oldest first."""
    query = select(table).where(table.c.namespace == ledger.namespace)
    if memory_id is not None:
        query = query.where(table.c.memory_id == memory_id)
    with read_transaction(ledger.engine) as conn:
        return conn.execute(query.order_by(table.c.id)).mappings().all()


def _open(events: list[Tombstone]) -> list[Tombstone]:
    """The ``retired`` events no ``restored`` or ``failed`` event closed, in order."""
    closed = {e.tombstone_id for e in events if e.event in _CLOSING}
    return [e for e in events if e.event == "retired" and e.tombstone_id not in closed]


def open_tombstones(ledger: Any, memory_id: str) -> list[Tombstone]:
    """The memory's ``retired`` events with no ``restored`` or ``failed`` event, oldest first.

    Normally at most one; two applies of one memory at the same moment leave two.

    Args:
        ledger: The ``HarmLedger``.
        memory_id: The memory's id in your store.

    Returns:
        The open ``retired`` events.
    """
    return _open(tombstone_events(ledger, memory_id))


def retired_memory_ids(ledger: Any) -> set[str]:
    """The memories an applied review retired and nothing restored: out of the store now.

    Args:
        ledger: The ``HarmLedger``.

    Returns:
        Their ids (one read of the namespace's tombstone events).
    """
    return {e.memory_id for e in _open(tombstone_events(ledger))}


def active_tombstone(ledger: Any, memory_id: str) -> Tombstone | None:
    """The memory's open ``retired`` event (it is out of the store), if any.

    Args:
        ledger: The ``HarmLedger``.
        memory_id: The memory's id in your store.

    Returns:
        The latest ``retired`` event with no ``restored`` or ``failed`` event, or None.
    """
    found = open_tombstones(ledger, memory_id)
    return found[-1] if found else None


def pending_decisions(ledger: Any, memory_ids: Sequence[str] | None = None) -> list[ReviewDecision]:
    """Accepted decisions not yet applied to the store (module docstring), oldest first.

    Args:
        ledger: The ``HarmLedger``.
        memory_ids: Only these memories (None: all).

    Returns:
        Per memory, its latest decision when that accepts and nothing settled it yet.
    """
    latest: dict[str, ReviewDecision] = {}
    for d in decisions(ledger):
        latest[d.memory_id] = d
    wanted = None if memory_ids is None else set(memory_ids)
    events = tombstone_events(ledger)
    failed = {e.tombstone_id for e in events if e.event == "failed"}
    settled = {
        e.decision_id
        for e in events
        if e.event in _SETTLING and e.decision_id and e.tombstone_id not in failed
    }
    return [
        d
        for d in latest.values()
        if d.decision == "accepted"
        and d.decision_id not in settled
        and (wanted is None or d.memory_id in wanted)
    ]


def record_event(
    ledger: Any,
    *,
    memory_id: str,
    event: TombstoneEvent,
    store: str,
    tombstone_id: str | None = None,
    content_hash: str | None = None,
    actor: str | None = None,
    reason: str | None = None,
    decision_id: str | None = None,
    run_ids: Sequence[str] = (),
    payload: dict[str, Any] | None = None,
    detail: str | None = None,
) -> Tombstone:
    """Append one tombstone event (one transaction).

    Args:
        ledger: The ``HarmLedger``.
        memory_id: The memory's id in your store.
        event: ``retired``, ``restored``, ``missing`` or ``failed``.
        store: The store adapter's label.
        tombstone_id: The tombstone it belongs to (default: a new one).
        content_hash: SHA-256 of the memory's text.
        actor: Who.
        reason: Why (redacted).
        decision_id: The accepted decision applied.
        run_ids: The evidence runs.
        payload: The memory as the adapter encoded it (kept exactly, not redacted).
        detail: A note (redacted).

    Returns:
        The event as recorded.

    Raises:
        ConfigurationError: The tombstone already has an event of this kind (a restore
            recorded twice).
    """
    row: dict[str, Any] = {
        "tombstone_id": tombstone_id or str(uuid.uuid4()),
        "namespace": ledger.namespace,
        "created_at": _now(ledger),
        "memory_id": str(memory_id),
        "content_hash": content_hash,
        "event": event,
        "store": safe_text(store) or "store",
        "actor": safe_text(actor),
        "reason": safe_text(reason, 2000),
        "decision_id": decision_id,
        "run_ids": [str(r) for r in run_ids],
        "payload": payload,
        "detail": safe_text(detail, 2000),
    }
    try:
        with write_transaction(ledger.engine) as conn:
            conn.execute(t.tombstones.insert().values(**row))
    except IntegrityError as exc:
        raise ConfigurationError(
            f"tombstone {row['tombstone_id']} already has a {event!r} event"
        ) from exc
    return Tombstone(**row)
