"""What every concern of the harm ledger shares (``store.HarmLedger`` composes them).

The ledger's state (engine, namespace, privacy switch, query key, clock), the id under
which a query is recorded, and the readers that turn stored rows back into records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from ..core.errors import ConfigurationError, MeClearError
from ..runtime.hashing import query_hash
from . import schema as t
from .database import read_transaction
from .records import CandidateRecord, FeedbackRecord, MemoryRecord, RunRecord

__all__ = [
    "CHUNK",
    "Clock",
    "LedgerBase",
    "LedgerLookupError",
    "chunks",
    "feedback_record",
    "inserted_key",
    "maybe_utc",
    "memory_record",
    "utc",
]

Clock = Callable[[], datetime]
CHUNK = 400
"""Ids per ``IN (...)`` list."""


class LedgerLookupError(MeClearError, KeyError):
    """No run, query or feedback with the given id in this ledger namespace."""

    def __str__(self) -> str:  # KeyError's repr-quoting is unhelpful in messages
        return str(self.args[0]) if self.args else ""


def utc(value: datetime) -> datetime:
    """SQLite returns naive datetimes: they are UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def maybe_utc(value: datetime | None) -> datetime | None:
    """:func:`utc`, None kept."""
    return None if value is None else utc(value)


def chunks(items: Sequence[str]) -> Iterable[Sequence[str]]:
    """``items`` in slices of :data:`CHUNK` (one ``IN (...)`` list each)."""
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


class LedgerBase:
    """The state and the row readers every concern of the ledger uses (module docstring).

    ``HarmLedger.__init__`` sets the attributes; the concerns (``recording``, ``harm``,
    ``feedback``, ``reviewing``, ``lookups``) are mixins over this base.
    """

    url: str
    namespace: str
    store_text: bool
    engine: Engine
    lexical_threshold: float
    embedding_threshold: float
    reverify_quiet_seconds: float
    _query_key: bytes | str | None
    _clock: Clock

    def _now(self) -> datetime:
        return utc(self._clock())

    def query_id(self, query: str) -> str:
        """The id under which ``query`` is recorded (``runtime.hashing.query_hash``).

        Args:
            query: The query text.

        Returns:
            The (keyed) query hash.
        """
        return query_hash(query, key=self._query_key)

    def _stored_run(self, conn: Connection, run_id: str) -> RunRecord | None:
        r = t.runs
        row = conn.execute(select(r).where(r.c.run_id == run_id)).mappings().first()
        if row is None:
            return None
        if row["namespace"] != self.namespace:
            raise ConfigurationError(
                f"run id {run_id!r} is already recorded in another ledger namespace"
            )
        return self._load(conn, row)

    def _load(self, conn: Connection, row: Any) -> RunRecord:
        m, c = t.run_memories, t.candidates
        memories = conn.execute(
            select(m).where(m.c.run_pk == row["id"]).order_by(m.c.position)
        ).mappings()
        cands = conn.execute(
            select(c).where(c.c.run_pk == row["id"]).order_by(c.c.position)
        ).mappings()
        return self._run_record(dict(row), [dict(x) for x in memories], [dict(x) for x in cands])

    @staticmethod
    def _run_record(
        run: dict[str, Any], memories: list[dict[str, Any]], cands: list[dict[str, Any]]
    ) -> RunRecord:
        fields = {k: v for k, v in run.items() if k not in ("id", "config")}
        fields["created_at"] = utc(fields["created_at"])
        fields["extra"] = fields.get("extra") or {}
        fields["cost"] = fields.get("cost") or {}
        return RunRecord(
            **fields,
            memories=[memory_record(x) for x in memories],
            candidates=[
                CandidateRecord(**{k: v for k, v in x.items() if k not in ("id", "run_pk")})
                for x in cands
            ],
        )

    def _feedback_records(self, query: Any) -> list[FeedbackRecord]:
        fm = t.feedback_memories
        with read_transaction(self.engine) as conn:
            rows = conn.execute(query).mappings().all()
            named: dict[int, list[str]] = {}
            pks = [row["id"] for row in rows]
            for start in range(0, len(pks), CHUNK):
                for pk, mid in conn.execute(
                    select(fm.c.feedback_pk, fm.c.memory_id)
                    .where(fm.c.feedback_pk.in_(pks[start : start + CHUNK]))
                    .order_by(fm.c.id)
                ):
                    named.setdefault(pk, []).append(mid)
        return [feedback_record(row, named.get(row["id"], [])) for row in rows]


def memory_record(row: Any) -> MemoryRecord:
    """A stored ``run_memories`` row as a record."""
    lo, hi = row["shapley_lo"], row["shapley_hi"]
    return MemoryRecord(
        memory_id=row["memory_id"],
        content_hash=row["content_hash"],
        position=row["position"],
        text=row["memory_text"],
        loo_effect=row["loo_effect"],
        loo_label=row["loo_label"],
        shapley=row["shapley"],
        shapley_interval=(lo, hi) if lo is not None and hi is not None else None,
        rank=row["rank"],
        harmful=row["harmful"],
        cleared=row["cleared"],
        offered_as_prior=row["offered_as_prior"],
    )


def feedback_record(row: Any, memory_ids: list[str]) -> FeedbackRecord:
    """A stored ``feedback`` row, with the memories it names, as a record."""
    fields = {k: v for k, v in row.items() if k != "id"}
    fields["created_at"] = utc(fields["created_at"])
    return FeedbackRecord(**fields, memory_ids=memory_ids)


def inserted_key(result: Any) -> int:
    """The primary key of the row an ``INSERT`` wrote."""
    key = result.inserted_primary_key
    if key is None:  # pragma: no cover - every supported backend returns it
        raise RuntimeError("the database did not return the inserted row's key")
    return int(key[0])
