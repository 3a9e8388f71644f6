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
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from sqlalchemy import and_, func, select, update
from sqlalchemy.engine import Connection

from ..core.errors import ConfigurationError
from . import schema as t
from .base import chunks

__all__ = [
    "CHALLENGE_EVENTS",
    "REVERIFY_QUIET_SECONDS",
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
    reference: str | None = None
    """``reference``: the reference answer the settling run kept (``store_text=True``)."""


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
        .add_columns(r.c.extra, m.c.memory_id, m.c.content_hash, f.c.authority, f.c.correction)
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
            reference = _reference(row.extra) if authority == "reference" else None
            if reference is None and current is not None and current.authority == authority:
                reference = current.reference  # an earlier reference run of this row kept one
            out[key] = Settlement(
                memory_id=row.memory_id,
                content_hash=row.content_hash,
                query_id=row.query_id,
                authority=authority,
                run_id=row.run_id,
                feedback_id=row.feedback_id,
                correction=row.correction if row.success_signal == "feedback" else None,
                actor=f"{authority}:{row.source_id}" if row.source_id else authority,
                reference=reference,
            )
    return out


def _reference(extra: Any) -> str | None:
    """The reference answer a run kept in its ``extra`` (``HarmLedger.record``), if any."""
    value = extra.get("reference") if isinstance(extra, dict) else None
    return value if isinstance(value, str) and value else None


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


REVERIFY_QUIET_SECONDS = 86_400.0
"""Default quiet period after an ``upheld`` verdict: challenges of that question recorded
within it are covered by the verdict and not re-verified (:func:`pending_challenges`)."""


def pending_challenges(
    conn: Connection,
    namespace: str,
    limit: int = 100,
    *,
    quiet_seconds: float = REVERIFY_QUIET_SECONDS,
    query_ids: Iterable[str] | None = None,
) -> list[str]:
    """Run ids of the challenges no re-verification answered yet, newest per question.

    A challenge is answered when a verdict event (``lifted`` / ``upheld`` / ``checked``)
    names it or a re-verification run of it (``replay_of``), or a later challenge of the
    same question was answered; a re-verification run without a verdict (its worker died
    before the verdict transaction) answers nothing, so the challenge stays pending. A
    challenge recorded less than ``quiet_seconds`` after the question's last ``upheld``
    verdict is covered by that verdict (a trusted settlement challenged on every ask costs
    one re-verification per quiet period, not one per ask) when its context (memory ids
    and texts) is the one that verdict judged: a changed store is re-verified at once.

    Only questions with a settled scope row can have an actionable challenge (a challenge
    whose memories are no longer settled only earns ``checked`` events), so the reads are
    index range reads, never a scan of the runs table: the settled rows of the scope state
    (``ix_meclear_memory_scopes_query``, namespace prefix), the runs of those questions
    (``ix_meclear_runs_query``), and the verdict events of their settled memories
    (``ix_meclear_memory_events_memory``).

    Args:
        conn: A connection in a read transaction.
        namespace: The ledger's namespace.
        limit: At most this many (oldest question first).
        quiet_seconds: The quiet period after an ``upheld`` verdict (0: none).
        query_ids: Only these questions (None: every question).

    Returns:
        The challenge runs' ids.
    """
    s, r, e = t.memory_scopes, t.runs, t.memory_events
    wanted = None if query_ids is None else sorted(set(query_ids))
    scoped = select(s.c.query_id, s.c.memory_id).where(
        s.c.namespace == namespace, s.c.settled.is_(True)
    )
    rows: list[Any] = []
    for part in [None] if wanted is None else chunks(wanted):
        query = scoped if part is None else scoped.where(s.c.query_id.in_(part))
        rows.extend(conn.execute(query).all())
    qids = sorted({row.query_id for row in rows})
    mids = sorted({row.memory_id for row in rows})
    runs: dict[str, Any] = {}
    for part in chunks(qids):
        for row in conn.execute(
            select(
                r.c.id,
                r.c.run_id,
                r.c.query_id,
                r.c.created_at,
                r.c.status,
                r.c.recovered,
                r.c.clearance_search,
                r.c.origin,
                r.c.replay_of,
            ).where(r.c.namespace == namespace, r.c.query_id.in_(part))
        ):
            runs[row.run_id] = row
    answered: set[str] = set()
    upheld: dict[str, tuple[datetime, str]] = {}
    for part in chunks(mids):
        for verdict in conn.execute(
            select(e.c.run_id, e.c.event, e.c.created_at).where(
                e.c.namespace == namespace,
                e.c.memory_id.in_(part),
                e.c.event.in_(CHALLENGE_EVENTS),
            )
        ):
            run = runs.get(verdict.run_id) if verdict.run_id else None
            if run is None:
                continue
            target = run.replay_of if run.origin == "reverify" and run.replay_of else run.run_id
            answered.add(target)
            at = _utc(verdict.created_at)
            if verdict.event == "upheld" and at is not None:
                previous = upheld.get(run.query_id)
                if previous is None or at >= previous[0]:
                    upheld[run.query_id] = (at, target)
    newest: dict[str, Any] = {}
    done: dict[str, Any] = {}
    for run in sorted(runs.values(), key=lambda row: row.id):
        if run.origin == "reverify" or not (
            run.status == "complete" and not run.recovered and run.clearance_search == "prior"
        ):
            continue
        newest[run.query_id] = run
        if run.run_id in answered:
            done[run.query_id] = run
    quiet = timedelta(seconds=max(0.0, float(quiet_seconds)))
    out: list[tuple[int, str]] = []
    for qid, run in newest.items():
        last = done.get(qid)
        if last is not None and last.id >= run.id:
            continue  # the newest challenge (or a later one) was answered
        last_upheld = upheld.get(qid)
        at = _utc(run.created_at)
        if last_upheld is not None and at is not None and at < last_upheld[0] + quiet:
            before = runs.get(last_upheld[1])
            if before is not None and _context(conn, run.id) == _context(conn, before.id):
                continue  # the same context's recent upheld verdict covers it
        out.append((run.id, run.run_id))
    return [run_id for _, run_id in sorted(out)][:limit]


def _context(conn: Connection, run_pk: int) -> frozenset[tuple[str, str]]:
    """A run's context: its memories' (id, content hash), read by ``run_pk``'s index."""
    m = t.run_memories
    rows = conn.execute(select(m.c.memory_id, m.c.content_hash).where(m.c.run_pk == run_pk))
    return frozenset((row.memory_id, row.content_hash) for row in rows)


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


def settlement_counts(
    conn: Connection, namespace: str, *, quiet_seconds: float = REVERIFY_QUIET_SECONDS
) -> dict[str, int]:
    """Challenges (settled harm the live judge did not confirm) and their verdicts.

    Args:
        conn: A connection in a read transaction.
        namespace: The ledger's namespace.
        quiet_seconds: The quiet period of :func:`pending_challenges`.

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
        "pending": len(
            pending_challenges(conn, namespace, limit=10_000, quiet_seconds=quiet_seconds)
        ),
        "lifted": int(events.get("lifted", 0)),
        "upheld": int(events.get("upheld", 0)),
        "reinstated": int(events.get("reinstated", 0)),
    }
