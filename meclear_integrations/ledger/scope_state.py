"""Per memory and question state, kept up to date on write (``meclear_memory_scopes``).

The request path must not recompute a memory's evidence from every run that touched it.
Each recorded run that verified (status ``complete``, recovered) updates, in the same
transaction, one row per memory it has a verdict on, keyed by (namespace, memory id, content
hash, query id):

- *cleared*: the verified clearance removed it (``cleared_at``, ``cleared_run_id``,
  ``harm_runs`` + 1); *rooted* when the run did not get the memory from the ledger's
  shortcut (a full run attributed it, or a person's feedback named it and the reference
  verified): only rooted questions count in review (``review``);
- *settled*: rooted or proven by a run judged against a reference answer or a person's
  correction (success signal ``reference`` / ``feedback``): a live reference-free judge
  that cannot confirm it later (it may be the judge that was fooled) does not undo it, but
  makes that run a challenge, re-verified against the settlement's own evidence, which may
  lift it for the question (``settlement``: the row's ``restored_at``, as a restore would);
- *proven* / *acquitted*: its own removal was shown necessary, or not needed, by the run's
  put-back tests (``proof``); an acquittal by the full context alone (a run tried before the
  early exit whose full context the live judge accepted) is not one;
- *carrier*: kept by the verified run yet named a carrier of its harm (alone it gives the
  harmful answer, ``core.stages.carriers``; kept under ``clearance_scope="minimal"`` or
  withheld under ``"complete"``): harm for this question like a clearance (``cleared_at``,
  ``cleared_run_id``, ``carrier``), *settled* when the run's signal was a reference or a
  correction, never *rooted*, *proven* or counted in ``harm_runs`` (review proposes it
  through ``carrier_proposals`` only); a later finding that the question needs it or that it
  helped lifts it as it does a clearance;
- *needed*: a full attribution kept it with a contribution clear of zero and above the
  run's harm tolerance (``needed_at``, ``needed_runs`` + 1); *helpful*: kept with a
  positive contribution whose interval still reaches zero (``helpful_at``).

``active`` (the harm holds for this question) is the latest clearance being later than the
memory's last restore, than any finding that the question needs it or that it helped, and
than any acquittal. A lookup reads, by index, at most :data:`ROWS_PER_MEMORY` ``active`` rows
per memory of the context (the questions it was most recently cleared for) and the asking
question's own rows: O(K) rows, independent of the history's length and of how many
questions a memory was verified harmful on. A memory harmful on more questions than that is
compared with the most recent ones only: a question like an older one then pays its own
verified clearance (the safe direction), after which its own row is always read.

Rows are upserted with ``INSERT ... ON CONFLICT DO NOTHING`` then locked (``SELECT ... FOR
UPDATE`` on PostgreSQL; SQLite's write transaction already holds the lock) and updated, so
concurrent writers of the same (memory, question) never lose an update.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import Integer, bindparam, insert, select, true, union_all, update
from sqlalchemy.engine import Connection

from . import schema as t
from .proof import GUIDED_MODES, split_members

__all__ = [
    "ROWS_PER_MEMORY",
    "Observation",
    "RunVerdicts",
    "ScopeRow",
    "apply_run",
    "apply_runs",
    "load_active",
    "observe",
    "restore_scopes",
]

_CHUNK = 400


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class Observation:
    """One memory's verdict in one verified run."""

    memory_id: str
    content_hash: str
    cleared: bool = False
    rooted: bool = False
    proven: bool = False
    acquitted: bool = False
    needed: bool = False
    helpful: bool = False
    settled: bool = False
    carrier: bool = False
    shapley: float | None = None


@dataclass(frozen=True, slots=True)
class ScopeRow:
    """An active row as the request path reads it."""

    memory_id: str
    content_hash: str
    query_id: str
    signature: list[str] | None
    embedding: list[float] | None
    cleared_run_id: str | None
    carrier: bool
    tested: bool
    settled: bool = False
    active: bool = True
    names: list[str] | None = None
    """The question's name signature (``scope.name_signature``; None: recorded before
    schema version 3, so like no other question)."""


def observe(
    *,
    status: str,
    recovered: bool,
    mode: str,
    harm_tolerance: float | None,
    memories: Sequence[dict[str, Any]],
    candidates: Sequence[dict[str, Any]],
    carriers: Iterable[str] = (),
    success_signal: str = "judge",
) -> list[Observation]:
    """The verdicts one recorded run gives (module docstring); none unless it verified.

    Args:
        status: The run's status.
        recovered: Whether its returned context passed.
        mode: The run's mode (``records.RunMode``).
        harm_tolerance: tau of its configuration.
        memories: Its memory rows (``rows.memory_rows``).
        candidates: Its candidate rows (``rows.candidate_rows``).
        carriers: Ids the report marks as carriers of a redundant fault.
        success_signal: What the run was judged against (``records.SuccessSignal``).

    Returns:
        One observation per memory with a verdict.
    """
    if status != "complete" or not recovered:
        return []
    cleared = [m["memory_id"] for m in memories if m["cleared"]]
    tried = [(list(c["memory_ids"]), bool(c["recovered"])) for c in candidates]
    proven, put_back = split_members(cleared, tried)
    singles = {x for x in cleared if not set(cleared) - {x}}
    rooted = mode == "full" or mode == "feedback_guided"
    strong = success_signal in ("reference", "feedback")
    carrier_ids = set(carriers)
    tau = harm_tolerance or 0.0
    out = []
    for m in memories:
        mid = m["memory_id"]
        if m["cleared"]:
            out.append(
                Observation(
                    memory_id=mid,
                    content_hash=m["content_hash"],
                    cleared=True,
                    rooted=rooted,
                    proven=mid in proven,
                    settled=strong and (rooted or mid in proven),
                    acquitted=mid in put_back and mode in GUIDED_MODES and mid not in singles,
                    carrier=mid in carrier_ids,
                    shapley=m.get("shapley"),
                )
            )
        elif mid in carrier_ids:
            out.append(
                Observation(
                    memory_id=mid, content_hash=m["content_hash"], carrier=True, settled=strong
                )
            )
        elif m.get("shapley") is not None and m["shapley"] > tau:
            lo = m.get("shapley_lo")
            needed = lo is not None and lo > 0.0
            out.append(
                Observation(
                    memory_id=mid, content_hash=m["content_hash"], needed=needed, helpful=True
                )
            )
    return out


def _later(current: datetime | None, at: datetime) -> datetime:
    current = _utc(current)
    return at if current is None or at >= current else current


def _active(row: dict[str, Any]) -> bool:
    cleared = _utc(row["cleared_at"])
    if cleared is None:
        return False
    return all(
        (other := _utc(row[k])) is None or cleared > other
        for k in ("restored_at", "needed_at", "helpful_at", "acquitted_at")
    )


def _upsert_keys(conn: Connection, keys: list[dict[str, Any]]) -> None:
    s = t.memory_scopes
    dialect = conn.dialect.name
    if dialect in ("postgresql", "sqlite"):
        from sqlalchemy.dialects import postgresql, sqlite

        module: Any = postgresql if dialect == "postgresql" else sqlite
        conn.execute(
            module.insert(s).on_conflict_do_nothing(
                index_elements=["namespace", "memory_id", "content_hash", "query_id"]
            ),
            keys,
        )
        return
    for key in keys:  # pragma: no cover - other backends are not supported by the ledger
        found = conn.execute(
            select(s.c.id).where(
                s.c.namespace == key["namespace"],
                s.c.memory_id == key["memory_id"],
                s.c.content_hash == key["content_hash"],
                s.c.query_id == key["query_id"],
            )
        ).first()
        if found is None:
            conn.execute(insert(s).values(**key))


@dataclass(frozen=True, slots=True)
class RunVerdicts:
    """One recorded run's observations with what locates them (:func:`apply_runs`)."""

    query_id: str
    run_id: str
    at: datetime
    signature: list[str] | None
    embedding: list[float] | None
    observations: Sequence[Observation]
    names: list[str] | None = None


def apply_run(
    conn: Connection,
    *,
    namespace: str,
    query_id: str,
    run_id: str,
    at: datetime,
    signature: list[str] | None,
    embedding: list[float] | None,
    observations: Sequence[Observation],
    names: list[str] | None = None,
) -> None:
    """Fold one run's observations into the state (inside the run's write transaction).

    Args:
        conn: The connection of the write transaction.
        namespace: The ledger's namespace.
        query_id: The run's query id.
        run_id: The run's id.
        at: The run's time (UTC).
        signature: The question's lexical signature (None: unknown).
        embedding: The question's embedding, if the caller gave one.
        observations: :func:`observe`'s verdicts.
        names: The question's name signature (None: unknown).
    """
    apply_runs(
        conn,
        namespace,
        [RunVerdicts(query_id, run_id, at, signature, embedding, observations, names)],
    )


def apply_runs(conn: Connection, namespace: str, runs: Sequence[RunVerdicts]) -> None:
    """Fold many runs' observations into the state, in order, with a few statements.

    The keys are inserted if missing (``ON CONFLICT DO NOTHING``), read back (locked on
    PostgreSQL), merged in Python run by run and written back with one ``executemany``.

    Args:
        conn: The connection of the write transaction.
        namespace: The ledger's namespace.
        runs: The runs, oldest first.
    """
    runs = [r for r in runs if r.observations]
    if not runs:
        return
    s = t.memory_scopes
    first: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in runs:
        at = _utc(r.at) or r.at
        for o in r.observations:
            first.setdefault(
                (o.memory_id, o.content_hash, r.query_id),
                {
                    "namespace": namespace,
                    "memory_id": o.memory_id,
                    "content_hash": o.content_hash,
                    "query_id": r.query_id,
                    "signature": r.signature,
                    "names": r.names,
                    "embedding": r.embedding,
                    "active": False,
                    "tested": False,
                    "settled": False,
                    "carrier": False,
                    "harm_runs": 0,
                    "needed_runs": 0,
                    "shapley_sum": 0.0,
                    "shapley_count": 0,
                    "updated_at": at,
                },
            )
    _upsert_keys(conn, list(first.values()))
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    memory_ids = sorted({k[0] for k in first})
    query_ids = sorted({k[2] for k in first})
    for start in range(0, len(memory_ids), _CHUNK):
        for qstart in range(0, len(query_ids), _CHUNK):
            query = select(s).where(
                s.c.namespace == namespace,
                s.c.memory_id.in_(memory_ids[start : start + _CHUNK]),
                s.c.query_id.in_(query_ids[qstart : qstart + _CHUNK]),
            )
            if conn.dialect.name == "postgresql":
                query = query.with_for_update()
            for found in conn.execute(query).mappings():
                key = (found["memory_id"], found["content_hash"], found["query_id"])
                if key in first:
                    rows[key] = dict(found)
    changed: dict[int, dict[str, Any]] = {}
    for r in runs:
        at = _utc(r.at) or r.at
        for o in r.observations:
            row = rows[(o.memory_id, o.content_hash, r.query_id)]
            row.update(_merge(row, o, at, r))
            changed[row["id"]] = row
    if changed:
        columns = [c.name for c in s.columns if c.name not in _KEY_COLUMNS]
        conn.execute(
            update(s).where(s.c.id == bindparam("row_id")),
            [{**{c: row[c] for c in columns}, "row_id": pk} for pk, row in changed.items()],
        )


_KEY_COLUMNS = ("id", "namespace", "memory_id", "content_hash", "query_id")


def _merge(row: dict[str, Any], o: Observation, at: datetime, r: RunVerdicts) -> dict[str, Any]:
    """The row's new values after observation ``o`` of run ``r`` (the state's rules)."""
    values: dict[str, Any] = {"updated_at": at}
    if row["signature"] is None and r.signature is not None:
        values["signature"] = r.signature
    if row["names"] is None and r.names is not None:
        values["names"] = r.names
    if row["embedding"] is None and r.embedding is not None:
        values["embedding"] = r.embedding
    if o.cleared:
        if _later(row["cleared_at"], at) == at:
            values["cleared_at"] = at
            values["cleared_run_id"] = r.run_id
            # a carrier cleared again by a guided run (as a member of the ledger's
            # candidate) stays one until a run attributes or proves its own removal
            sticky = bool(row["carrier"]) and not (o.rooted or o.proven)
            values["carrier"] = o.carrier or sticky
        values["harm_runs"] = row["harm_runs"] + 1
        if o.rooted and _later(row["rooted_at"], at) == at:
            values["rooted_at"] = at
            values["rooted_run_id"] = r.run_id
        if o.proven:
            values["proven_at"] = _later(row["proven_at"], at)
        if o.settled:
            values["settled_at"] = _later(row["settled_at"], at)
        if o.acquitted:
            values["acquitted_at"] = _later(row["acquitted_at"], at)
        if o.shapley is not None:
            values["shapley_sum"] = row["shapley_sum"] + o.shapley
            values["shapley_count"] = row["shapley_count"] + 1
    elif o.carrier:
        if _later(row["cleared_at"], at) == at:
            values["cleared_at"] = at
            values["cleared_run_id"] = r.run_id
            values["carrier"] = True
        if o.settled:
            values["settled_at"] = _later(row["settled_at"], at)
    if o.helpful:
        values["helpful_at"] = _later(row["helpful_at"], at)
    if o.needed:
        if _later(row["needed_at"], at) == at:
            values["needed_at"] = at
            values["needed_run_id"] = r.run_id
        values["needed_runs"] = row["needed_runs"] + 1
    merged = {**row, **values}
    values["active"] = _active(merged)
    values["tested"] = merged["proven_at"] is not None or merged["acquitted_at"] is not None
    values["settled"] = _settled(merged)
    return values


def _settled(row: dict[str, Any]) -> bool:
    settled, restored = _utc(row["settled_at"]), _utc(row["restored_at"])
    return settled is not None and (restored is None or settled > restored)


def restore_scopes(conn: Connection, namespace: str, memory_id: str, at: datetime) -> None:
    """A restore of ``memory_id``: every question's harm is lifted until new evidence.

    Args:
        conn: The connection of the restore's write transaction.
        namespace: The ledger's namespace.
        memory_id: The restored memory.
        at: The restore's time (UTC).
    """
    s = t.memory_scopes
    conn.execute(
        update(s)
        .where(s.c.namespace == namespace, s.c.memory_id == memory_id)
        .values(restored_at=at, active=False, settled=False, updated_at=at)
    )


def _lookup_columns() -> list[Any]:
    s = t.memory_scopes
    return [
        s.c.id,
        s.c.memory_id,
        s.c.content_hash,
        s.c.query_id,
        s.c.signature,
        s.c.names,
        s.c.embedding,
        s.c.cleared_run_id,
        s.c.carrier,
        s.c.tested,
        s.c.settled,
        s.c.active,
    ]


_S = t.memory_scopes
ROWS_PER_MEMORY = 16
"""The most active rows a lookup reads per memory (its most recent clearances; module
docstring): a memory verified harmful on more questions is compared with the
:data:`ROWS_PER_MEMORY` questions it was most recently cleared for, and always with the
asking question's own row."""
_LOOKUP_CHUNK = 64
"""Memories per lookup statement (a context of K <= 64 memories is read in one)."""


@lru_cache(maxsize=_LOOKUP_CHUNK * 2)
def _lookup(memories: int, own: bool) -> Any:
    """The request path's read for ``memories`` memories, built once per size.

    One ``UNION ALL`` statement: per memory its :data:`ROWS_PER_MEMORY` most recent active
    rows of that text (index on namespace, memory id, content hash, active, cleared at:
    each branch stops after that many rows), plus, with ``own``, the asking question's rows
    of those memories, active or not (index on namespace, query id).
    """
    branches: list[Any] = []
    for i in range(memories):
        recent = (
            select(*_lookup_columns())
            .where(
                _S.c.namespace == bindparam("namespace"),
                _S.c.memory_id == bindparam(f"m{i}"),
                _S.c.content_hash == bindparam(f"h{i}"),
                _S.c.active == true(),  # an equality, so the index also orders cleared_at
            )
            .order_by(_S.c.cleared_at.desc())
            .limit(bindparam("per_memory", type_=Integer))
            .subquery(f"r{i}")
        )
        branches.append(select(*recent.c))
    if own:
        branches.append(
            select(*_lookup_columns()).where(
                _S.c.namespace == bindparam("namespace"),
                _S.c.query_id == bindparam("query_id"),
                _S.c.memory_id.in_(bindparam("ids", expanding=True)),
            )
        )
    return branches[0] if len(branches) == 1 else union_all(*branches)


def load_active(
    conn: Connection, namespace: str, hashes: dict[str, str], query_id: str | None = None
) -> list[ScopeRow]:
    """The active rows of the context's memories (same id and same text), bounded.

    At most :data:`ROWS_PER_MEMORY` active rows per memory (its most recent clearances)
    and this question's own rows: O(K) rows whatever the history and however many
    questions a memory was verified harmful on.

    Args:
        conn: A connection in a read transaction.
        namespace: The ledger's namespace.
        hashes: Memory id -> content hash of the context.
        query_id: Also return this question's inactive rows (its own verdict on a memory
            wins over a similar question's).

    Returns:
        The rows (one per memory and question).
    """
    items = list(hashes.items())
    out: list[ScopeRow] = []
    seen: set[tuple[str, str]] = set()
    for start in range(0, len(items), _LOOKUP_CHUNK):
        chunk = items[start : start + _LOOKUP_CHUNK]
        params: dict[str, Any] = {"namespace": namespace, "per_memory": ROWS_PER_MEMORY}
        for i, (memory_id, content_hash) in enumerate(chunk):
            params[f"m{i}"], params[f"h{i}"] = memory_id, content_hash
        if query_id is not None:
            params["query_id"], params["ids"] = query_id, [m for m, _ in chunk]
        found = conn.execute(_lookup(len(chunk), query_id is not None), params).all()
        for row in sorted(found, key=lambda r: (r.memory_id, r.id)):  # first recorded first
            key = (row.memory_id, row.query_id)
            if hashes.get(row.memory_id) != row.content_hash or key in seen:
                continue
            seen.add(key)
            out.append(
                ScopeRow(
                    memory_id=row.memory_id,
                    content_hash=row.content_hash,
                    query_id=row.query_id,
                    signature=list(row.signature) if row.signature else None,
                    embedding=list(row.embedding) if row.embedding else None,
                    cleared_run_id=row.cleared_run_id,
                    carrier=bool(row.carrier),
                    tested=bool(row.tested),
                    settled=bool(row.settled),
                    active=bool(row.active),
                    names=list(row.names) if row.names is not None else None,
                )
            )
    return out
