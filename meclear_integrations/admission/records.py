"""Durable admission records: the status an application queries, beside the job table.

One row per admission job in ``meclear_admission_records`` (the job table's database:
SQLite file or PostgreSQL). The request path inserts the ``pending`` row; the worker that
decides writes the decision before it touches the memory store (``applied`` false), then
marks it ``applied`` once the store callback returned. A job run again after a killed
worker therefore reuses the recorded decision (no second model bill) and, once applied,
does not write the memory again.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Engine,
    Float,
    Index,
    MetaData,
    String,
    Table,
    Text,
    select,
    update,
)

from ..ledger.database import write_transaction
from .background_models import AdmissionRecord

__all__ = ["AdmissionRecords"]

_metadata = MetaData()
records = Table(
    "meclear_admission_records",
    _metadata,
    Column("job_id", String(64), primary_key=True),
    Column("namespace", String(200), nullable=False),
    Column("memory_id", String(200), nullable=False),
    Column("state", String(12), nullable=False),
    Column("applied", Boolean, nullable=False, default=False),
    Column("record", Text, nullable=False),
    Column("updated_at", Float, nullable=False),
    Index("ix_meclear_admission_records_memory", "namespace", "memory_id"),
)


class AdmissionRecords:
    """The admission records of one namespace in ``engine``'s database.

    Args:
        engine: The job table's SQLAlchemy engine.
        namespace: Separates applications sharing one database.
    """

    def __init__(self, engine: Engine, namespace: str = "default") -> None:
        self.engine = engine
        self.namespace = namespace
        _metadata.create_all(engine)

    def add_pending(self, record: AdmissionRecord, memory_id: str) -> None:
        """Insert the ``pending`` row unless the job already has one (joined or decided).

        Args:
            record: The pending record.
            memory_id: The memory's id in the store.
        """
        with write_transaction(self.engine) as conn:
            exists = conn.execute(
                select(records.c.job_id).where(records.c.job_id == record.job_id)
            ).first()
            if exists is None:
                conn.execute(
                    records.insert().values(
                        job_id=record.job_id,
                        namespace=self.namespace,
                        memory_id=memory_id,
                        state=record.state,
                        applied=False,
                        record=record.model_dump_json(),
                        updated_at=time.time(),
                    )
                )

    def put(self, record: AdmissionRecord, memory_id: str, *, applied: bool) -> None:
        """Write ``record`` (insert or replace) with its ``applied`` flag.

        Args:
            record: The record.
            memory_id: The memory's id in the store.
            applied: The store callback returned.
        """
        values: dict[str, Any] = {
            "state": record.state,
            "applied": applied,
            "record": record.model_dump_json(),
            "updated_at": time.time(),
        }
        with write_transaction(self.engine) as conn:
            done = conn.execute(
                update(records).where(records.c.job_id == record.job_id).values(**values)
            )
            if not done.rowcount:
                conn.execute(
                    records.insert().values(
                        job_id=record.job_id,
                        namespace=self.namespace,
                        memory_id=memory_id,
                        **values,
                    )
                )

    def get(self, job_id: str) -> tuple[AdmissionRecord, bool] | None:
        """The job's record and its ``applied`` flag, or None.

        Args:
            job_id: The job.

        Returns:
            ``(record, applied)`` or None.
        """
        with self.engine.connect() as conn:
            row = conn.execute(
                select(records.c.record, records.c.applied).where(records.c.job_id == job_id)
            ).first()
        if row is None:
            return None
        return AdmissionRecord.model_validate_json(row.record), bool(row.applied)

    def failed(self) -> list[AdmissionRecord]:
        """The ``failed`` records of this namespace, oldest first.

        Returns:
            The records.
        """
        query = (
            select(records.c.record)
            .where(records.c.namespace == self.namespace, records.c.state == "failed")
            .order_by(records.c.updated_at)
        )
        with self.engine.connect() as conn:
            return [AdmissionRecord.model_validate_json(text) for (text,) in conn.execute(query)]

    def many(self, job_ids: list[str]) -> dict[str, tuple[AdmissionRecord, bool]]:
        """The records of ``job_ids`` that exist, with their ``applied`` flags.

        Args:
            job_ids: The jobs.

        Returns:
            ``{job_id: (record, applied)}``.
        """
        out: dict[str, tuple[AdmissionRecord, bool]] = {}
        with self.engine.connect() as conn:
            for start in range(0, len(job_ids), 500):
                chunk = job_ids[start : start + 500]
                query = select(records.c.job_id, records.c.record, records.c.applied).where(
                    records.c.job_id.in_(chunk)
                )
                for job_id, text, applied in conn.execute(query):
                    out[str(job_id)] = (AdmissionRecord.model_validate_json(text), bool(applied))
        return out
