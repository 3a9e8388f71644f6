"""Reading the record back: runs, a memory's history and the namespace's counts.

What an operator or a tool reads (``meclear ledger``): :meth:`Lookups.find_run` by ledger,
tracing or query id, :meth:`Lookups.runs`, :meth:`Lookups.history` and :meth:`Lookups.stats`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, or_, select

from . import schema as t
from .base import LedgerBase, LedgerLookupError, chunks, memory_record, utc
from .database import read_transaction
from .records import MemoryEvent, MemoryHistory, MemoryObservation, RunRecord
from .settlement import settlement_counts

__all__ = ["Lookups"]


class Lookups(LedgerBase):
    """Runs, histories and counts of this namespace."""

    def find_run(self, ref: str) -> RunRecord:
        """The run ``ref`` names.

        The run with ledger id ``ref``, else the latest run with tracing run id ``ref``, else
        the latest run of query id ``ref``.

        Args:
            ref: A ledger run id, a tracing run id or a query id.

        Returns:
            The run, with its memories and candidates.

        Raises:
            LedgerLookupError: No run matches ``ref``.
        """
        r = t.runs
        ref = str(ref)
        with read_transaction(self.engine) as conn:
            for column in (r.c.run_id, r.c.trace_run_id, r.c.query_id):
                row = (
                    conn.execute(
                        select(r)
                        .where(r.c.namespace == self.namespace, column == ref)
                        .order_by(r.c.id.desc())
                        .limit(1)
                    )
                    .mappings()
                    .first()
                )
                if row is not None:
                    return self._load(conn, row)
        raise LedgerLookupError(
            f"no run, tracing run or query with id {ref!r} in ledger namespace {self.namespace!r}"
        )

    def runs(
        self, *, query_id: str | None = None, origin: str | None = None, limit: int = 100
    ) -> list[RunRecord]:
        """Recorded runs, newest first, with their memories and candidates.

        Args:
            query_id: Only the runs of this query.
            origin: Only the runs of this origin (``live``, ``replay``...).
            limit: The most runs returned.

        Returns:
            The runs.
        """
        r = t.runs
        query = select(r).where(r.c.namespace == self.namespace)
        if query_id is not None:
            query = query.where(r.c.query_id == query_id)
        if origin is not None:
            query = query.where(r.c.origin == origin)
        with read_transaction(self.engine) as conn:
            rows = conn.execute(query.order_by(r.c.id.desc()).limit(limit)).mappings().all()
            return [self._load(conn, row) for row in rows]

    def history(self, memory_id: str) -> MemoryHistory:
        """Every recorded appearance, feedback and restore of ``memory_id``, oldest first.

        Args:
            memory_id: The memory's id in your store.

        Returns:
            Its appearances in recorded runs, the feedback naming it and its restores.
        """
        r, m, f, fm, e = t.runs, t.run_memories, t.feedback, t.feedback_memories, t.memory_events
        with read_transaction(self.engine) as conn:
            rows = (
                conn.execute(
                    select(m, r.c.run_id, r.c.created_at, r.c.query_id, r.c.origin, r.c.mode)
                    .add_columns(r.c.status, r.c.recovered, r.c.success_signal)
                    .join(r, m.c.run_pk == r.c.id)
                    .where(m.c.namespace == self.namespace, m.c.memory_id == memory_id)
                    .order_by(r.c.created_at, r.c.id)
                )
                .mappings()
                .all()
            )
            run_ids = sorted({row["run_id"] for row in rows})
            conditions = [
                f.c.id.in_(
                    select(fm.c.feedback_pk).where(
                        fm.c.namespace == self.namespace, fm.c.memory_id == memory_id
                    )
                )
            ]
            conditions += [f.c.run_id.in_(chunk) for chunk in chunks(run_ids)]
            feedback_query = (
                select(f).where(f.c.namespace == self.namespace, or_(*conditions)).order_by(f.c.id)
            )
            events = (
                conn.execute(
                    select(e)
                    .where(e.c.namespace == self.namespace, e.c.memory_id == memory_id)
                    .order_by(e.c.created_at, e.c.id)
                )
                .mappings()
                .all()
            )
        observations = [
            MemoryObservation(
                run_id=row["run_id"],
                created_at=utc(row["created_at"]),
                query_id=row["query_id"],
                origin=row["origin"],
                mode=row["mode"],
                status=row["status"],
                recovered=row["recovered"],
                success_signal=row["success_signal"],
                memory=memory_record(row),
            )
            for row in rows
        ]
        return MemoryHistory(
            namespace=self.namespace,
            memory_id=memory_id,
            observations=observations,
            feedback=self._feedback_records(feedback_query),
            events=[
                MemoryEvent(
                    **{k: v for k, v in ev.items() if k not in ("id", "created_at")},
                    created_at=utc(ev["created_at"]),
                )
                for ev in events
            ],
        )

    def stats(self) -> dict[str, Any]:
        """Counts per mode, feedback and restores in this namespace."""
        r, f, e = t.runs, t.feedback, t.memory_events
        with read_transaction(self.engine) as conn:
            modes: dict[str, int] = dict(
                conn.execute(
                    select(r.c.mode, func.count())
                    .where(r.c.namespace == self.namespace)
                    .group_by(r.c.mode)
                ).all()
            )
            model_calls = conn.execute(
                select(func.sum(r.c.model_calls)).where(r.c.namespace == self.namespace)
            ).scalar()
            queries = conn.execute(
                select(func.count(func.distinct(r.c.query_id))).where(
                    r.c.namespace == self.namespace
                )
            ).scalar()
            feedback_rows = conn.execute(
                select(f.c.correct, func.count())
                .where(f.c.namespace == self.namespace)
                .group_by(f.c.correct)
            ).all()
            restores = conn.execute(
                select(func.count()).where(e.c.namespace == self.namespace, e.c.event == "restored")
            ).scalar()
            settlement = settlement_counts(
                conn, self.namespace, quiet_seconds=self.reverify_quiet_seconds
            )
        counts = {bool(k): int(v) for k, v in feedback_rows}
        return {
            "namespace": self.namespace,
            "runs": sum(modes.values()),
            "runs_by_mode": {str(k): int(v) for k, v in sorted(modes.items())},
            "distinct_queries": int(queries or 0),
            "model_calls": int(model_calls or 0),
            "feedback": {"correct": counts.get(True, 0), "incorrect": counts.get(False, 0)},
            "restores": int(restores or 0),
            "settlements": settlement,
        }
