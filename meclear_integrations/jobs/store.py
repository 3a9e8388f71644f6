"""The embedded job table: durable background jobs in the ledger's database, no server needed.

One table, ``meclear_audit_jobs``, beside the ledger's (same SQLite file or PostgreSQL
database, SQLAlchemy like the ledger), for every job kind (:mod:`.kinds`: ``audit``,
``admission``; a ``kind`` column, added to older tables on open). A job moves
``queued -> running -> done``, or back to ``queued`` with a later ``run_after`` (backoff),
or to ``dead`` with its reason (the dead letters). Delivery is at least once:

- **Leases.** A worker claims a job for ``lease_seconds``; a worker that dies (``kill -9``)
  leaves a ``running`` job whose lease runs out, and the next claim takes it over. Each
  claim counts an attempt, so a payload that kills every worker ends in the dead letters.
  A live worker extends its lease while the job runs (:meth:`JobStore.heartbeat`), so a
  job that runs longer than its lease is not taken over while its worker is alive.
- **Single flight.** A partial unique index allows one ``queued``/``running`` job per
  :func:`~.snapshot.flight_key`; a second identical question joins the pending job (its
  ``joined`` count grows) instead of queueing another.
- **Idempotent results.** The audit records its ledger run under the job id
  (``HarmLedger.record(run_id=job_id)``), so a job finished twice leaves one ledger run.

- **The database's clock.** Leases, backoff and due times are judged by the database, not
  by the worker: SQLite's own clock in SQL (``julianday('now')``), PostgreSQL's
  ``clock_timestamp()``. A worker whose clock runs ahead cannot take over a live job.
- **Fencing tokens.** Every claim increments the job's ``fence``; :meth:`JobStore.complete`,
  :meth:`~JobStore.retry`, :meth:`~JobStore.dead` and :meth:`~JobStore.heartbeat` from a
  worker pass the token of its claim and are refused (logged, ``False``) once another claim
  took the job over, so a worker that lost its lease cannot dead-letter, requeue or finish
  the job another worker now holds. (Its ledger result is still there: the ledger write is
  idempotent under the job id.)

Claims are one write transaction: ``BEGIN IMMEDIATE`` on SQLite (one writer at a time),
``SELECT ... FOR UPDATE SKIP LOCKED`` on PostgreSQL (concurrent workers take different jobs).
Tables made by older versions get the ``kind`` and ``fence`` columns when opened.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import (
    Column,
    Engine,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    and_,
    bindparam,
    func,
    literal,
    literal_column,
    or_,
    select,
    text,
    update,
)

from ..core.redaction import redact
from ..ledger.database import create_ledger_engine, display_url, ledger_url, write_transaction
from .claim import ClaimedJob, default_worker_name
from .kinds import AUDIT, JobKinds
from .protocol import Auditor, AuditTicket
from .snapshot import AuditSnapshot

__all__ = ["ClaimedJob", "JobRecord", "JobState", "JobStore", "default_worker_name"]

logger = logging.getLogger(__name__)

JobState = Literal["queued", "running", "done", "dead"]
_ACTIVE = ("queued", "running")

metadata = MetaData()
jobs = Table(
    "meclear_audit_jobs",
    metadata,
    Column("job_id", String(36), primary_key=True),
    Column("namespace", String(200), nullable=False),
    Column("flight_key", String(64), nullable=False),
    Column("kind", String(40), nullable=False, server_default=AUDIT),
    Column("state", String(12), nullable=False),
    Column("payload", Text, nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("max_attempts", Integer, nullable=False),
    Column("joined", Integer, nullable=False, default=0),
    Column("run_after", Float, nullable=False),
    Column("lease_until", Float),
    Column("worker", String(200)),
    Column("last_error", Text),
    Column("dead_reason", Text),
    Column("ledger_run_id", String(64)),
    Column("created_at", Float, nullable=False),
    Column("finished_at", Float),
    Column("fence", Integer, nullable=False, server_default="0"),
    Index("ix_meclear_audit_jobs_claim", "state", "run_after"),
)
Index(
    "ux_meclear_audit_jobs_flight",
    jobs.c.namespace,
    jobs.c.flight_key,
    unique=True,
    sqlite_where=jobs.c.state.in_(_ACTIVE),
    postgresql_where=jobs.c.state.in_(_ACTIVE),
)


@dataclass(frozen=True, slots=True)
class JobRecord:
    """A job as stored (for status, tests and the dead letters)."""

    job_id: str
    state: str
    attempts: int
    joined: int
    run_after: float
    last_error: str | None
    dead_reason: str | None
    ledger_run_id: str | None
    worker: str | None
    kind: str = AUDIT
    lease_until: float | None = None
    fence: int = 0
    """How many times the job was claimed (the token of its latest claim)."""


class JobStore:
    """Durable audit jobs in a SQL table (module docstring).

    Args:
        url: A SQLAlchemy URL or SQLite path (None: ``MECLEAR_LEDGER_URL``, else the
            ledger's default file) — normally the ledger's own URL.
        namespace: Separates applications sharing one database.
        max_attempts: Claims before a job goes to the dead letters.
        clock: Epoch seconds for a test's fake time. None (the default): the database's
            clock, so leases do not depend on any worker's clock.
        **engine_kwargs: Passed to SQLAlchemy's ``create_engine``.

    Example:
        >>> from meclear_integrations.jobs import JobStore
        >>> JobStore("sqlite://").stats()
        {'queued': 0, 'running': 0, 'done': 0, 'dead': 0}
    """

    backend = "sqlite"

    def __init__(
        self,
        url: str | os.PathLike[str] | None = None,
        *,
        namespace: str = "default",
        max_attempts: int = 8,
        clock: Callable[[], float] | None = None,
        **engine_kwargs: Any,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.url = ledger_url(url)
        self.namespace = namespace
        self.max_attempts = max_attempts
        self.clock = clock
        self.engine: Engine = create_ledger_engine(self.url, **engine_kwargs)
        self.backend = self.engine.dialect.name
        metadata.create_all(self.engine)
        _add_missing_columns(self.engine)
        self._pools: list[Any] = []
        # built once: the request path only binds parameters (SQLAlchemy caches the SQL)
        self._insert = self._insert_new(self.engine.dialect.name).returning(jobs.c.job_id)
        self._join = (
            update(jobs)
            .where(
                jobs.c.namespace == bindparam("ns"),
                jobs.c.flight_key == bindparam("key"),
                jobs.c.state.in_(_ACTIVE),
            )
            .values(joined=jobs.c.joined + 1)
            .returning(jobs.c.job_id)
        )

    def __repr__(self) -> str:
        return f"JobStore({display_url(self.url)!r}, namespace={self.namespace!r})"

    def close(self) -> None:
        """Release the database connections."""
        self.engine.dispose()

    # ------------------------------------------------------------------ producer
    def submit(self, snapshot: AuditSnapshot) -> AuditTicket:
        """Queue an audit, or join the pending one for the same question and context.

        Args:
            snapshot: The audit's frozen input.

        Returns:
            The ticket: the job id and whether it joined a pending job.
        """
        return self.enqueue(AUDIT, snapshot.dumps(), key=snapshot.key)

    def enqueue(self, kind: str, payload: str, *, key: str) -> AuditTicket:
        """Queue a job of ``kind``, or join the pending one with the same ``key``.

        Args:
            kind: The job kind (a worker's :class:`~.kinds.JobKinds` runs it).
            payload: The job's input, as text (JSON).
            key: The single-flight key (64 characters at most): one pending job per key.
                Keys of different kinds must differ (hash the kind in).

        Returns:
            The ticket: the job id and whether it joined a pending job.
        """
        job_id = str(uuid.uuid4())
        row = {
            "job_id": job_id,
            "namespace": self.namespace,
            "flight_key": key,
            "kind": kind,
            "state": "queued",
            "payload": payload,
            "attempts": 0,
            "max_attempts": self.max_attempts,
            "joined": 0,
        }
        insert = self._insert.values(run_after=self._now(), created_at=self._now())
        for _ in range(3):  # a pending job may finish between the insert and the join
            joined: str | None = None
            with write_transaction(self.engine) as conn:
                # one statement in the common case: the partial unique index decides
                if conn.execute(insert, row).first() is None:
                    pending = conn.execute(self._join, {"ns": self.namespace, "key": key}).first()
                    if pending is None:
                        continue
                    joined = str(pending.job_id)
            if joined is not None:
                return AuditTicket(joined, True, self.backend)
            self._woken()
            return AuditTicket(job_id, False, self.backend)
        raise RuntimeError("could not queue or join the job")  # pragma: no cover

    @staticmethod
    def _insert_new(dialect: str) -> Any:
        """INSERT that does nothing when the question's audit is already pending."""
        where = text("state IN ('queued', 'running')")  # literal: matches the index predicate
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            return pg_insert(jobs).on_conflict_do_nothing(
                index_elements=["namespace", "flight_key"], index_where=where
            )
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(jobs).on_conflict_do_nothing(
            index_elements=["namespace", "flight_key"], index_where=where
        )

    # ------------------------------------------------------------------ consumer
    def claim(
        self, worker: str, *, lease_seconds: float, kinds: tuple[str, ...] | None = None
    ) -> ClaimedJob | None:
        """Take the next due job (or one whose lease ran out) under a lease.

        Due times and leases are judged by the database's clock (module docstring). A job
        claimed ``max_attempts`` times without finishing goes to the dead letters. Each
        claim increments the job's fencing token (``ClaimedJob.fence``).

        Args:
            worker: The claiming worker's name.
            lease_seconds: How long the job is the worker's (a running worker extends it
                with :meth:`heartbeat`).
            kinds: Only jobs of these kinds (None: every kind; a worker without a
                handler for a job's kind dead-letters it).

        Returns:
            The job, or None when nothing is due.
        """
        now = self._now()
        due = or_(
            and_(jobs.c.state == "queued", jobs.c.run_after <= now),
            and_(jobs.c.state == "running", jobs.c.lease_until < now),
        )
        with write_transaction(self.engine) as conn:
            while True:
                query = (
                    select(
                        jobs.c.job_id,
                        jobs.c.payload,
                        jobs.c.attempts,
                        jobs.c.max_attempts,
                        jobs.c.state,
                        jobs.c.worker,
                        jobs.c.kind,
                        jobs.c.fence,
                    )
                    .where(self._mine(), due, *self._of_kinds(kinds))
                    .order_by(jobs.c.run_after)
                    .limit(1)
                    .with_for_update(skip_locked=True)
                )
                row = conn.execute(query).first()
                if row is None:
                    return None
                if row.attempts >= row.max_attempts:
                    reason = (
                        f"lease expired {row.attempts} times (last worker {row.worker})"
                        if row.state == "running"
                        else f"gave up after {row.attempts} attempts"
                    )
                    conn.execute(self._finish(row.job_id, "dead", dead_reason=reason))
                    continue
                held = conn.execute(
                    update(jobs)
                    .where(jobs.c.job_id == row.job_id, jobs.c.fence == row.fence)
                    .values(
                        state="running",
                        attempts=row.attempts + 1,
                        lease_until=self._now() + lease_seconds,
                        worker=worker,
                        fence=row.fence + 1,
                    )
                    .returning(jobs.c.lease_until, jobs.c.fence)
                ).first()
                if held is None:  # pragma: no cover - the row lock makes this unreachable
                    continue
                return ClaimedJob(
                    row.job_id,
                    row.payload,
                    row.attempts + 1,
                    row.max_attempts,
                    float(held.lease_until),
                    row.kind,
                    int(held.fence),
                )

    def heartbeat(
        self, job_id: str, worker: str, *, lease_seconds: float, fence: int | None = None
    ) -> bool:
        """Extend a running job's lease: its worker is alive (the lease heartbeat).

        Only the worker holding the job extends it; a job taken over after its lease ran
        out is no longer this worker's.

        Args:
            job_id: The job.
            worker: The worker holding it.
            lease_seconds: The new lease, from the database's now.
            fence: The token of the worker's claim (None: checked by name only).

        Returns:
            Whether the lease was extended (False: the job is no longer this worker's).
        """
        where = [jobs.c.job_id == job_id, jobs.c.state == "running", jobs.c.worker == worker]
        if fence is not None:
            where.append(jobs.c.fence == fence)
        with write_transaction(self.engine) as conn:
            result = conn.execute(
                update(jobs).where(*where).values(lease_until=self._now() + lease_seconds)
            )
        return bool(result.rowcount)

    def complete(self, job_id: str, *, ledger_run_id: str | None, fence: int | None = None) -> bool:
        """Mark a job done (the ledger holds its result under ``ledger_run_id``).

        Args:
            job_id: The job.
            ledger_run_id: The ledger run the audit recorded.
            fence: The token of the worker's claim: refused when another claim took the
                job over since (None: an operator's action, not fenced).

        Returns:
            Whether the job was marked done (False: refused and logged, or not active).
        """
        return self._settle(
            job_id, fence, "complete", self._finish(job_id, "done", ledger_run_id=ledger_run_id)
        )

    def retry(self, job_id: str, *, delay: float, error: str, fence: int | None = None) -> bool:
        """Put a job back with a backoff delay (from the database's now).

        Args:
            job_id: The job.
            delay: Seconds before it is due again.
            error: Why the attempt failed (redacted before storing).
            fence: The token of the worker's claim (see :meth:`complete`).

        Returns:
            Whether the job was put back (False: refused and logged, or not running).
        """
        statement = (
            update(jobs)
            .where(jobs.c.job_id == job_id, jobs.c.state == "running")
            .values(
                state="queued",
                run_after=self._now() + delay,
                lease_until=None,
                last_error=redact(error)[:2000],
            )
        )
        return self._settle(job_id, fence, "retry", statement)

    def dead(self, job_id: str, *, reason: str, fence: int | None = None) -> bool:
        """Move a job to the dead letters with its reason.

        Args:
            job_id: The job.
            reason: Why it cannot run (redacted before storing).
            fence: The token of the worker's claim (see :meth:`complete`).

        Returns:
            Whether the job was dead-lettered (False: refused and logged, or not active).
        """
        return self._settle(job_id, fence, "dead", self._finish(job_id, "dead", dead_reason=reason))

    def _settle(self, job_id: str, fence: int | None, action: str, statement: Any) -> bool:
        """Run a worker's final write on ``job_id``, fenced by its claim's token."""
        if fence is not None:
            statement = statement.where(jobs.c.state == "running", jobs.c.fence == fence)
        with write_transaction(self.engine) as conn:
            changed = bool(conn.execute(statement).rowcount)
            if changed or fence is None:
                return changed
            row = conn.execute(
                select(jobs.c.state, jobs.c.fence, jobs.c.worker).where(jobs.c.job_id == job_id)
            ).first()
        holder = "no such job" if row is None else f"{row.state}, fence {row.fence}, {row.worker}"
        logger.warning(
            "MeClear job %s: %s refused: the claim with fence %d lost its lease (job now: %s)",
            job_id,
            action,
            fence,
            holder,
        )
        return False

    def start_workers(
        self,
        auditor: Auditor | JobKinds | Any,
        *,
        concurrency: int = 1,
        lease_seconds: float = 180.0,
        **worker_kwargs: Any,
    ) -> Any:
        """Start in-process worker threads on this table (a ``WorkerPool``).

        The threads claim only the kinds they have handlers for, so components sharing a
        table (a background retriever and an admission gate) do not take each other's jobs.

        Args:
            auditor: Runs each job: the component (an auditor, or an object with
                ``job_handlers()``) or a :class:`~.kinds.JobKinds`.
            concurrency: Worker threads.
            lease_seconds: How long a claimed job is a worker's.
            **worker_kwargs: Passed to each worker (``heartbeat_seconds``, ``backoff``).

        Returns:
            The started pool (``stop()`` it on shutdown).
        """
        from .worker import WorkerPool

        pool = WorkerPool(
            self, auditor, concurrency=concurrency, lease_seconds=lease_seconds, **worker_kwargs
        )
        self._pools.append(pool)
        return pool.start()

    def _woken(self) -> None:
        for pool in self._pools:
            pool.wake()

    # ------------------------------------------------------------------ reading
    def get(self, job_id: str) -> JobRecord:
        """One job as stored.

        Args:
            job_id: The job.

        Returns:
            Its record.

        Raises:
            KeyError: No such job.
        """
        with self.engine.connect() as conn:
            row = conn.execute(select(jobs).where(jobs.c.job_id == job_id)).first()
        if row is None:
            raise KeyError(job_id)
        return _record(row)

    def list_jobs(
        self, state: JobState | None = None, *, kind: str | None = None
    ) -> list[JobRecord]:
        """The jobs of this namespace (one state and kind, or all), oldest first.

        Args:
            state: Only jobs in this state.
            kind: Only jobs of this kind.

        Returns:
            Their records.
        """
        query = select(jobs).where(self._mine()).order_by(jobs.c.created_at)
        if state is not None:
            query = query.where(jobs.c.state == state)
        if kind is not None:
            query = query.where(jobs.c.kind == kind)
        with self.engine.connect() as conn:
            return [_record(row) for row in conn.execute(query)]

    def dead_letters(self) -> list[JobRecord]:
        """The jobs that cannot run, with their reasons."""
        return self.list_jobs("dead")

    def stats(self, kind: str | None = None) -> dict[str, int]:
        """How many jobs are in each state (of one kind, or all).

        Args:
            kind: Only jobs of this kind.

        Returns:
            ``{state: count}``.
        """
        counts = {"queued": 0, "running": 0, "done": 0, "dead": 0}
        query = select(jobs.c.state, func.count()).where(self._mine()).group_by(jobs.c.state)
        if kind is not None:
            query = query.where(jobs.c.kind == kind)
        with self.engine.connect() as conn:
            for state, count in conn.execute(query):
                counts[state] = int(count)
        return counts

    # ------------------------------------------------------------------ pieces
    def _mine(self) -> Any:
        return jobs.c.namespace == self.namespace

    @staticmethod
    def _of_kinds(kinds: tuple[str, ...] | None) -> tuple[Any, ...]:
        return () if kinds is None else (jobs.c.kind.in_(kinds),)

    def _now(self) -> Any:
        """Now, in epoch seconds, as SQL: the database's clock (or a test's fake clock)."""
        if self.clock is not None:
            return literal(float(self.clock()), Float)
        return _DB_NOW.get(self.backend, _DB_NOW["sqlite"])

    def _finish(self, job_id: str, state: str, **values: Any) -> Any:
        if "dead_reason" in values:
            values["dead_reason"] = redact(str(values["dead_reason"]))[:2000]
        return (
            update(jobs)
            .where(jobs.c.job_id == job_id, jobs.c.state.in_(_ACTIVE))
            .values(state=state, finished_at=self._now(), lease_until=None, **values)
        )


_DB_NOW = {
    # SQLite's own clock (julianday('now') is UTC, millisecond resolution)
    "sqlite": literal_column("((julianday('now') - 2440587.5) * 86400.0)", Float),
    # clock_timestamp(): the real time, not the transaction's start (now())
    "postgresql": literal_column("extract(epoch from clock_timestamp())::float8", Float),
}
"""The database's clock as epoch seconds, per SQL dialect."""

_ADDED_COLUMNS = {
    "kind": f"kind VARCHAR(40) NOT NULL DEFAULT '{AUDIT}'",  # before kinds: all audits
    "fence": "fence INTEGER NOT NULL DEFAULT 0",  # before fencing tokens
}


def _add_missing_columns(engine: Engine) -> None:
    """Tables made by older versions get the columns added since (``_ADDED_COLUMNS``)."""
    from sqlalchemy import inspect

    columns = {c["name"] for c in inspect(engine).get_columns(jobs.name)}
    missing = [sql for name, sql in _ADDED_COLUMNS.items() if name not in columns]
    if missing:
        with write_transaction(engine) as conn:
            for sql in missing:
                conn.exec_driver_sql(f"ALTER TABLE {jobs.name} ADD COLUMN {sql}")


def _record(row: Any) -> JobRecord:
    return JobRecord(
        job_id=row.job_id,
        state=row.state,
        attempts=row.attempts,
        joined=row.joined,
        run_after=row.run_after,
        last_error=row.last_error,
        dead_reason=row.dead_reason,
        ledger_run_id=row.ledger_run_id,
        worker=row.worker,
        kind=row.kind,
        lease_until=row.lease_until,
        fence=row.fence,
    )
