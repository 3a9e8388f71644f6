"""Derive the per memory and question state from the history tables (``scope_state``).

The version-2 migration's backfill (``migrations``): every verified run folded in, in the
order it was recorded, then each memory's last restore.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection

from . import schema as t
from .scope_state import _CHUNK, _active, _settled, _utc, apply_run, observe

__all__ = ["rebuild"]


def rebuild(conn: Connection) -> int:
    """Derive the state from the history tables (the version-2 migration's backfill).

    Runs are folded in the order they were recorded; the last restore of each memory is
    applied after them (a clearance recorded after it stays active). Recorded questions get
    no lexical signature here (the ledger's ``query_key`` is not known to a migration): their
    harm applies to the same question only.

    Args:
        conn: The connection of the migration's write transaction.

    Returns:
        The number of verified runs folded in.
    """
    r, m, c, e, s = t.runs, t.run_memories, t.candidates, t.memory_events, t.memory_scopes
    verified = conn.execute(
        select(r.c.id, r.c.run_id, r.c.namespace, r.c.query_id, r.c.created_at, r.c.mode)
        .add_columns(r.c.harm_tolerance, r.c.success_signal, r.c.extra)
        .where(r.c.status == "complete", r.c.recovered.is_(True))
        .order_by(r.c.id)
    ).all()
    for start in range(0, len(verified), _CHUNK):
        chunk = verified[start : start + _CHUNK]
        pks = [row.id for row in chunk]
        mems: dict[int, list[dict[str, Any]]] = {}
        for row in conn.execute(select(m).where(m.c.run_pk.in_(pks)).order_by(m.c.position)):
            mems.setdefault(row.run_pk, []).append(dict(row._mapping))
        cands: dict[int, list[dict[str, Any]]] = {}
        for row in conn.execute(select(c).where(c.c.run_pk.in_(pks)).order_by(c.c.position)):
            cands.setdefault(row.run_pk, []).append(dict(row._mapping))
        for run in chunk:
            observations = observe(
                status="complete",
                recovered=True,
                mode=run.mode,
                harm_tolerance=run.harm_tolerance,
                memories=mems.get(run.id, []),
                candidates=cands.get(run.id, []),
                carriers=_recorded_carriers(run.extra),
                success_signal=run.success_signal,
            )
            apply_run(
                conn,
                namespace=run.namespace,
                query_id=run.query_id,
                run_id=run.run_id,
                at=_utc(run.created_at) or run.created_at,
                signature=None,
                embedding=None,
                observations=observations,
            )
    restores = conn.execute(
        select(e.c.namespace, e.c.memory_id, func.max(e.c.created_at))
        .where(e.c.event == "restored")
        .group_by(e.c.namespace, e.c.memory_id)
    ).all()
    for namespace, memory_id, at in restores:
        found = conn.execute(
            select(s).where(s.c.namespace == namespace, s.c.memory_id == memory_id)
        ).mappings()
        for scope_row in list(found):
            merged = {**dict(scope_row), "restored_at": at}
            conn.execute(
                update(s)
                .where(s.c.id == scope_row["id"])
                .values(restored_at=at, active=_active(merged), settled=_settled(merged))
            )
    return len(verified)


def _recorded_carriers(extra: Any) -> list[str]:
    """The carrier ids a run record keeps in ``extra["carriers"]`` (``review.carrier_payload``)."""
    found = extra.get("carriers") if isinstance(extra, dict) else None
    if not isinstance(found, list):
        return []
    return [str(c["memory_id"]) for c in found if isinstance(c, dict) and c.get("memory_id")]
