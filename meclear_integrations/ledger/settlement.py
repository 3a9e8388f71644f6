"""Settlements: who vouched for a settled harm, and lifting one its evidence no longer shows.

A harm is *settled* for a question (``scope_state``) when a run judged against a reference
answer or a person's correction verified it. The engine then withholds it even when the
live reference-free judge cannot confirm the answer without it (``core.prior``: the report
says ``recovered=False``, ``clearance_search="prior"``): that judge may be the one the stale
memory fooled. Such a run is a *challenge*: the live judge rejected the answer without the
memory. A settlement is never trusted silently on a challenge:

- its *authority* is read from the runs that settled it since the last restore or lift
  (:func:`settlements`): ``operator`` / ``reviewer`` (a trusted feedback replay),
  ``reference`` (a live or audit run judged against the application's reference answer),
  ``end_user`` (only end users' feedback replays, e.g. rows settled before ledger schema
  version 6 or rebuilt from history). A settlement resting on an end user's correction
  alone is not one: ``HarmLedger.prior_candidate`` does not mark it settled (so a
  challenge falls back to the usual flow, the memory served unless a verified run clears
  it), and its re-verification lifts it without a model call;
- a challenge is *re-verified* against the settlement's own evidence (``ledger.reverify``):
  the challenged run's context, the answer without the memory judged against the trusted
  feedback's correction (or a reference the caller gives for a reference settlement).
  Passing, the settlement stands (``upheld`` event) and the memory stays withheld; failing,
  it is lifted for that question (:func:`lift`: the scope row's ``restored_at``, an event
  ``lifted`` naming who, when, why and the evidence run) and the memory is served again. A
  reviewer or an operator reverses a lift with :func:`reinstate` (event ``reinstated``).

Events go to ``meclear_memory_events`` (``event`` ``lifted`` / ``upheld`` / ``reinstated``;
the run id is the re-verification run, or the challenge when no model call was needed); no
schema change. ``HarmLedger.stats()["settlements"]`` counts challenges and verdicts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import and_, exists, func, or_, select, update
from sqlalchemy.engine import Connection

from ..core.errors import ConfigurationError
from . import schema as t

__all__ = [
    "CHALLENGE_EVENTS",
    "Settlement",
    "SettlementAuthority",
    "challenge_condition",
    "check",
    "is_challenge",
    "lift",
    "pending_challenges",
    "reinstate",
    "settled_by",
    "settlement_counts",
    "settlements",
    "uphold",
]

SettlementAuthority = Literal["operator", "reviewer", "reference", "end_user"]
"""Who vouched for a settlement, strongest first (module docstring)."""
_RANK: dict[str, int] = {"operator": 3, "reviewer": 2, "reference": 1, "end_user": 0}
CHALLENGE_EVENTS = ("lifted", "upheld", "checked")
"""Memory events that answer a challenge (a re-verification's verdict)."""
Key = tuple[str, str, str]
"""(memory id, content hash, query id): one settled scope row."""


@dataclass(frozen=True, slots=True)
class Settlement:
    """The strongest evidence behind one settled (memory, question) row."""

    memory_id: str
    content_hash: str
    query_id: str
    authority: SettlementAuthority
    run_id: str
    """The latest run of that authority that settled it."""
    feedback_id: str | None = None
    """The feedback it replayed (``reviewer`` / ``operator`` / ``end_user``)."""
    correction: str | None = None
    """That feedback's correction: the evidence a re-verification judges against."""
    actor: str | None = None
    """Who gave it (``authority:source_id``)."""


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def settlements(conn: Connection, namespace: str, keys: Iterable[Key]) -> dict[Key, Settlement]:
    """The authority of each settled row among ``keys`` (module docstring).

    Reads the scope rows (their last restore or lift), then the verified runs judged against
    a reference or a correction of those questions that kept or cleared those memories: a
    few rows, only for settled harm in the context.

    Args:
        conn: A connection in a read or write transaction.
        namespace: The ledger's namespace.
        keys: (memory id, content hash, query id) of settled rows.

    Returns:
        Per key still settled, its strongest evidence (keys without one are left out).
    """
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    s, r, m, f = t.memory_scopes, t.runs, t.run_memories, t.feedback
    mids = sorted({k[0] for k in wanted})
    qids = sorted({k[2] for k in wanted})
    since: dict[Key, datetime | None] = {}
    for row in conn.execute(
        select(s.c.memory_id, s.c.content_hash, s.c.query_id, s.c.restored_at, s.c.settled).where(
            s.c.namespace == namespace, s.c.memory_id.in_(mids), s.c.query_id.in_(qids)
        )
    ):
        key = (row.memory_id, row.content_hash, row.query_id)
        if key in wanted and row.settled:
            since[key] = _utc(row.restored_at)
    if not since:
        return {}
    found = conn.execute(
        select(r.c.run_id, r.c.created_at, r.c.query_id, r.c.success_signal, r.c.feedback_id)
        .add_columns(m.c.memory_id, m.c.content_hash, f.c.authority, f.c.correction)
        .add_columns(f.c.source_id)
        .join(m, m.c.run_pk == r.c.id)
        .outerjoin(f, f.c.feedback_id == r.c.feedback_id)
        .where(
            r.c.namespace == namespace,
            r.c.status == "complete",
            r.c.recovered.is_(True),
            r.c.success_signal.in_(("reference", "feedback")),
            r.c.query_id.in_(qids),
            m.c.namespace == namespace,
            m.c.memory_id.in_(mids),
            m.c.cleared.is_(True),
        )
        .order_by(r.c.created_at, r.c.id)
    ).all()
    out: dict[Key, Settlement] = {}
    for row in found:
        key = (row.memory_id, row.content_hash, row.query_id)
        if key not in since:
            continue
        restored = since[key]
        at = _utc(row.created_at)
        if restored is not None and at is not None and at <= restored:
            continue
        authority: SettlementAuthority = (
            "reference"
            if row.success_signal == "reference"
            else row.authority
            if row.authority in ("reviewer", "operator")
            else "end_user"
        )
        current = out.get(key)
        if current is None or _RANK[authority] >= _RANK[current.authority]:
            out[key] = Settlement(
                memory_id=row.memory_id,
                content_hash=row.content_hash,
                query_id=row.query_id,
                authority=authority,
                run_id=row.run_id,
                feedback_id=row.feedback_id,
                correction=row.correction if row.success_signal == "feedback" else None,
                actor=f"{authority}:{row.source_id}" if row.source_id else authority,
            )
    return out


def settled_by(conn: Connection, namespace: str, memory_id: str, feedback_id: str) -> list[Key]:
    """Every question's settled row of ``memory_id`` whose strongest evidence is that feedback.

    Lifting a settlement lifts the feedback's verdict on the memory, not one question's copy
    of it (its replay, and re-verifications against it, may have settled several).

    Args:
        conn: A connection in a write transaction.
        namespace: The ledger's namespace.
        memory_id: The memory.
        feedback_id: The feedback whose correction was the evidence.

    Returns:
        The rows' keys.
    """
    s = t.memory_scopes
    keys = [
        (row.memory_id, row.content_hash, row.query_id)
        for row in conn.execute(
            select(s.c.memory_id, s.c.content_hash, s.c.query_id).where(
                s.c.namespace == namespace, s.c.memory_id == memory_id, s.c.settled.is_(True)
            )
        )
    ]
    found = settlements(conn, namespace, keys)
    return [k for k, v in found.items() if v.feedback_id == feedback_id]


def is_challenge(status: str, recovered: bool, clearance_search: str | None, cleared: int) -> bool:
    """Whether a run withheld settled harm the live judge did not confirm (module docstring).

    Args:
        status: The run's status.
        recovered: Whether its returned context passed.
        clearance_search: How its clearance was found.
        cleared: How many memories it cleared.

    Returns:
        True for a complete run whose prior candidate was the clearance without recovering.
    """
    return status == "complete" and not recovered and clearance_search == "prior" and cleared > 0


def challenge_condition() -> Any:
    """The SQL condition of :func:`is_challenge` on ``meclear_runs`` (cleared not checked)."""
    r = t.runs
    return and_(
        r.c.status == "complete",
        r.c.recovered.is_(False),
        r.c.clearance_search == "prior",
        r.c.origin != "reverify",
    )


def pending_challenges(conn: Connection, namespace: str, limit: int = 100) -> list[str]:
    """Run ids of the challenges no re-verification answered yet, newest per question.

    A challenge is answered when a re-verification run replays it (``replay_of``) or a
    verdict event names it, or a later challenge of the same question was answered.

    Args:
        conn: A connection in a read transaction.
        namespace: The ledger's namespace.
        limit: At most this many (oldest question first).

    Returns:
        The challenge runs' ids.
    """
    r, e = t.runs, t.memory_events
    later = r.alias("later")
    replay = r.alias("replay")
    answered = exists().where(
        later.c.namespace == namespace,
        later.c.query_id == r.c.query_id,
        later.c.created_at >= r.c.created_at,
        or_(
            exists().where(
                replay.c.namespace == namespace,
                replay.c.replay_of == later.c.run_id,
                replay.c.origin == "reverify",
            ),
            exists().where(
                e.c.namespace == namespace,
                e.c.run_id == later.c.run_id,
                e.c.event.in_(CHALLENGE_EVENTS),
            ),
        ),
    )
    rows = conn.execute(
        select(r.c.run_id, r.c.query_id, r.c.created_at, r.c.id)
        .where(r.c.namespace == namespace, challenge_condition(), ~answered)
        .order_by(r.c.id)
    ).all()
    newest: dict[str, str] = {}
    for row in rows:
        newest[row.query_id] = row.run_id
    return list(newest.values())[:limit]


def _event(
    namespace: str,
    at: datetime,
    memory_id: str,
    event: str,
    reason: str,
    actor: str | None,
    run_id: str | None,
    feedback_id: str | None,
) -> dict[str, Any]:
    return {
        "namespace": namespace,
        "created_at": at,
        "memory_id": memory_id,
        "event": event,
        "reason": reason[:2000],
        "actor": (actor or "")[:200] or None,
        "feedback_id": feedback_id,
        "run_id": run_id,
    }


def lift(
    conn: Connection,
    namespace: str,
    key: Key,
    *,
    at: datetime,
    reason: str,
    actor: str | None,
    run_id: str | None,
    feedback_id: str | None = None,
) -> None:
    """Lift one settlement: its harm for that question ends until new verified evidence.

    The scope row's ``restored_at`` moves to ``at`` (so it is neither active nor settled, and
    a later verified clearance counts again, settled only if that run's signal is strong),
    and an event ``lifted`` records who, when, why and the evidence run.

    Args:
        conn: The connection of a write transaction.
        namespace: The ledger's namespace.
        key: (memory id, content hash, query id) of the settled row.
        at: The time (UTC).
        reason: Why (the evidence and the challenge).
        actor: Who lifted it (``meclear:reverify`` for the re-verification).
        run_id: The evidence run (the re-verification run, or the challenge).
        feedback_id: The feedback whose correction was the evidence, if any.
    """
    memory_id, content_hash, query_id = key
    s = t.memory_scopes
    conn.execute(
        update(s)
        .where(
            s.c.namespace == namespace,
            s.c.memory_id == memory_id,
            s.c.content_hash == content_hash,
            s.c.query_id == query_id,
        )
        .values(restored_at=at, active=False, settled=False, updated_at=at)
    )
    conn.execute(
        t.memory_events.insert().values(
            **_event(namespace, at, memory_id, "lifted", reason, actor, run_id, feedback_id)
        )
    )


def uphold(
    conn: Connection,
    namespace: str,
    memory_id: str,
    *,
    at: datetime,
    reason: str,
    actor: str | None,
    run_id: str | None,
    feedback_id: str | None = None,
) -> None:
    """Record that a settlement stands after its re-verification (event ``upheld``).

    Args:
        conn: The connection of a write transaction.
        namespace: The ledger's namespace.
        memory_id: The memory.
        at: The time (UTC).
        reason: Why it stands.
        actor: Who decided (``meclear:reverify``).
        run_id: The evidence run (the re-verification run, or the challenge).
        feedback_id: The feedback whose correction was the evidence, if any.
    """
    conn.execute(
        t.memory_events.insert().values(
            **_event(namespace, at, memory_id, "upheld", reason, actor, run_id, feedback_id)
        )
    )


def check(
    conn: Connection,
    namespace: str,
    memory_id: str,
    *,
    at: datetime,
    reason: str,
    actor: str | None,
    run_id: str,
) -> None:
    """Record that a challenged memory needed no verdict (event ``checked``).

    Args:
        conn: The connection of a write transaction.
        namespace: The ledger's namespace.
        memory_id: The memory (no longer settled for the question).
        at: The time (UTC).
        reason: Why.
        actor: Who (``meclear:reverify``).
        run_id: The challenge.
    """
    conn.execute(
        t.memory_events.insert().values(
            **_event(namespace, at, memory_id, "checked", reason, actor, run_id, None)
        )
    )


def reinstate(
    conn: Connection,
    namespace: str,
    key: Key,
    *,
    at: datetime,
    authority: str,
    actor: str,
    reason: str,
    run_id: str | None = None,
) -> None:
    """A reviewer's or an operator's reversal of a lift: the settlement holds again.

    Args:
        conn: The connection of a write transaction.
        namespace: The ledger's namespace.
        key: (memory id, content hash, query id) of the lifted row.
        at: The time (UTC).
        authority: ``reviewer`` or ``operator`` (anything else is refused).
        actor: Who (recorded as ``authority:actor``).
        reason: Why (required: the audit trail).
        run_id: The run they rely on, if any.

    Raises:
        ConfigurationError: Not a reviewer or an operator, no actor or reason, or no such
            row (nothing was ever settled there).
    """
    if authority not in ("reviewer", "operator"):
        raise ConfigurationError(
            f"only a reviewer or an operator reinstates a settlement, not {authority!r}"
        )
    if not actor or not reason:
        raise ConfigurationError("reinstating a settlement needs actor= and reason= (audited)")
    memory_id, content_hash, query_id = key
    s = t.memory_scopes
    found = conn.execute(
        select(s.c.id, s.c.settled_at).where(
            s.c.namespace == namespace,
            s.c.memory_id == memory_id,
            s.c.content_hash == content_hash,
            s.c.query_id == query_id,
        )
    ).first()
    if found is None or found.settled_at is None:
        raise ConfigurationError(
            f"memory {memory_id} was never settled for question {query_id[:8]}: nothing to "
            "reinstate"
        )
    conn.execute(
        update(s)
        .where(s.c.id == found.id)
        .values(cleared_at=at, settled_at=at, active=True, settled=True, updated_at=at)
    )
    conn.execute(
        t.memory_events.insert().values(
            **_event(
                namespace, at, memory_id, "reinstated", reason, f"{authority}:{actor}", run_id, None
            )
        )
    )


def settlement_counts(conn: Connection, namespace: str) -> dict[str, int]:
    """Challenges (settled harm the live judge did not confirm) and their verdicts.

    Args:
        conn: A connection in a read transaction.
        namespace: The ledger's namespace.

    Returns:
        ``unconfirmed_runs``, ``pending``, ``lifted``, ``upheld``, ``reinstated``.
    """
    r, e = t.runs, t.memory_events
    challenges = conn.execute(
        select(func.count()).where(r.c.namespace == namespace, challenge_condition())
    ).scalar()
    events: dict[str, int] = dict(
        conn.execute(
            select(e.c.event, func.count())
            .where(e.c.namespace == namespace, e.c.event.in_(("lifted", "upheld", "reinstated")))
            .group_by(e.c.event)
        ).all()
    )
    return {
        "unconfirmed_runs": int(challenges or 0),
        "pending": len(pending_challenges(conn, namespace, limit=10_000)),
        "lifted": int(events.get("lifted", 0)),
        "upheld": int(events.get("upheld", 0)),
        "reinstated": int(events.get("reinstated", 0)),
    }
