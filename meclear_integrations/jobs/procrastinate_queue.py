"""Background jobs on procrastinate: several replicas or machines, the ledger's PostgreSQL.

Needs the ``jobs`` extra (``pip install 'meclear-integrations[jobs]'``: procrastinate 3 on
psycopg 3, the ledger's driver). Why procrastinate: see the package docstring (no broker
beside the PostgreSQL the ledger already uses; jobs are rows; heartbeats; retry
strategies; queueing locks).

What maps to what:

- **Single flight**: the job's queueing lock is the snapshot's
  :func:`~.snapshot.flight_key`; an identical question whose audit is still waiting joins
  it (procrastinate locks waiting jobs only: a duplicate that arrives while the audit
  runs queues one more, which then finds the ledger's proof and costs a repeat
  clearance's few calls).
- **Backoff**: an audit that comes back ``retry`` raises :class:`RetryAudit`, which the
  task's ``RetryStrategy`` retries with exponential waits up to ``max_attempts``.
- **Dead letters**: a payload that cannot run, a permanent failure or the last failed
  attempt writes a row to ``meclear_audit_dead_letters`` (job id, reason, payload) and the
  job ends ``failed``.
- **Killed workers**: workers send heartbeats; :meth:`ProcrastinateQueue.retry_stalled`
  (run by every worker at start and every ``stalled_seconds``) puts the jobs of workers
  silent for longer back in the queue.
- **Idempotent results**: the ledger run id of job ``n`` is ``procrastinate-<n>``.
- **Workers** run in their own processes (``meclear worker``), not as threads of the
  application: build the component with ``loop=Loop(audit_workers=0)``.
- **Schema**: procrastinate's tables and the dead-letter table are created on first use
  (the first submit, or a worker's start) by an idempotent migration under a PostgreSQL
  advisory lock, so replicas starting together on a fresh database do not race.
  ``migrate=False`` (a database user without DDL rights) refuses instead, with a message
  naming ``meclear worker --migrate`` / :meth:`ProcrastinateQueue.apply_schema`.
- **Jobs from another version**: a job whose arguments or payload this version cannot read
  goes to the dead letters with the reason and its payload, never dropped.
- **Job kinds**: audits are the ``meclear.audit`` task; every other kind
  (:meth:`ProcrastinateQueue.enqueue`, e.g. ``admission``) is the ``meclear.job`` task
  with its kind, on the same queue; a worker runs them with its
  :class:`~.kinds.JobKinds` and dead-letters a kind it has no handler for. Their ids are
  ``procrastinate-<n>`` in tickets and handlers alike.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, Float, MetaData, String, Table, Text, select
from sqlalchemy.engine import make_url

from ..core.errors import ConfigurationError
from ..core.redaction import redact
from ..ledger.database import create_ledger_engine, write_transaction
from .kinds import AUDIT, JobKinds
from .protocol import Auditor, AuditTicket
from .snapshot import AuditSnapshot

__all__ = ["ProcrastinateQueue", "RetryAudit"]

logger = logging.getLogger(__name__)

TASK_NAME = "meclear.audit"
JOB_TASK_NAME = "meclear.job"

_metadata = MetaData()
dead_letters = Table(
    "meclear_audit_dead_letters",
    _metadata,
    Column("job_id", String(64), primary_key=True),
    Column("reason", Text, nullable=False),
    Column("payload", Text),
    Column("created_at", Float, nullable=False),
)


class RetryAudit(Exception):
    """The audit should run again later (provider or ledger away)."""


class _DeadAudit(Exception):
    """The audit cannot run; already written to the dead letters."""


def _conninfo(url: str) -> str:
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        raise ValueError("ProcrastinateQueue needs a PostgreSQL URL")
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


@dataclass(frozen=True, slots=True)
class JobStatus:
    """A procrastinate job's state in the job table's words (:meth:`ProcrastinateQueue.get`)."""

    job_id: str
    state: str


class ProcrastinateQueue:
    """An :class:`~.protocol.AuditQueue` on procrastinate (module docstring).

    Args:
        url: The PostgreSQL URL (SQLAlchemy or libpq form; normally the ledger's).
        queue: The procrastinate queue name.
        max_attempts: Attempts before the dead letters.
        backoff_base: Exponential wait base in seconds (``base ** (attempt + 1)``).
        stalled_seconds: A worker silent this long is dead; its jobs run again.
        heartbeat_seconds: How often workers send heartbeats.
        migrate: Create the schema on first use when it is missing (False: refuse with
            :class:`~meclear_integrations.core.errors.ConfigurationError`).
    """

    backend = "procrastinate"

    def __init__(
        self,
        url: str,
        *,
        queue: str = "meclear_audits",
        max_attempts: int = 8,
        backoff_base: int = 2,
        stalled_seconds: float = 30.0,
        heartbeat_seconds: float = 5.0,
        migrate: bool = True,
    ) -> None:
        try:
            import procrastinate
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "ProcrastinateQueue needs procrastinate: pip install 'meclear-integrations[jobs]'"
            ) from exc
        self.url = url
        self.queue = queue
        self.max_attempts = max_attempts
        self.stalled_seconds = stalled_seconds
        self.heartbeat_seconds = heartbeat_seconds
        self.migrate = migrate
        self._schema_ready = False
        self.engine = create_ledger_engine(
            make_url(url).set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
        )
        self.app = procrastinate.App(
            connector=procrastinate.PsycopgConnector(conninfo=_conninfo(url))
        )
        self._kinds: JobKinds | None = None
        self._sync: Any = None
        self._follow_up: Any = None
        self._lock = threading.Lock()
        strategy = procrastinate.RetryStrategy(
            max_attempts=max_attempts - 1,
            exponential_wait=backoff_base,
            retry_exceptions={RetryAudit},
        )

        @self.app.task(name=TASK_NAME, queue=queue, retry=strategy, pass_context=True)
        def audit(context: Any, payload: str | None = None, **other: Any) -> str | None:
            return self._run_checked(context.job, AUDIT, payload, other)

        @self.app.task(name=JOB_TASK_NAME, queue=queue, retry=strategy, pass_context=True)
        def job(
            context: Any, kind: str | None = None, payload: str | None = None, **other: Any
        ) -> str | None:
            return self._run_checked(context.job, kind, payload, other)

        self._task = audit
        self._job_task = job

    def __repr__(self) -> str:
        return f"ProcrastinateQueue(queue={self.queue!r})"

    # ------------------------------------------------------------------ setup
    def apply_schema(self) -> bool:
        """Create procrastinate's tables and the dead-letter table if missing (idempotent).

        Runs in one transaction under a PostgreSQL advisory lock, so processes starting
        together on a fresh database apply it once. Called on first use (``migrate=True``)
        and by ``meclear worker --migrate``.

        Returns:
            Whether procrastinate's schema was created now (False: it was there).
        """
        schema = self.app.schema_manager.get_schema()
        created = False
        with self.engine.begin() as conn:
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(hashtext('meclear.procrastinate'))")
            if not self._schema_exists(conn):
                # procrastinate's own schema file, as its ``apply_schema`` runs it (no
                # parameters: psycopg runs the statements as they are)
                conn.connection.driver_connection.execute(schema)  # type: ignore[union-attr]
                created = True
            _metadata.create_all(conn)
        self._schema_ready = True
        if created:
            logger.info("MeClear: created procrastinate's schema in the ledger's database")
        return created

    def ensure_schema(self) -> None:
        """Make sure the schema exists before the first job (once per queue object).

        Raises:
            ConfigurationError: The schema is missing and ``migrate=False``.
        """
        if self._schema_ready:
            return
        with self.engine.connect() as conn:
            ready = (
                self._schema_exists(conn)
                and conn.exec_driver_sql(
                    "SELECT to_regclass('meclear_audit_dead_letters') IS NOT NULL"
                ).scalar()
            )
        if ready:
            self._schema_ready = True
        elif self.migrate:
            self.apply_schema()
        else:
            raise ConfigurationError(
                "the procrastinate job tables are missing from this database and the queue "
                "was built with migrate=False: run `meclear worker --component "
                "module:attribute --migrate` (or ProcrastinateQueue(url).apply_schema()) once "
                "as a user allowed to create tables"
            )

    @staticmethod
    def _schema_exists(conn: Any) -> bool:
        return bool(
            conn.exec_driver_sql("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").scalar()
        )

    def _open(self) -> None:
        self.ensure_schema()
        with self._lock:
            if self._sync is None:
                sync = self.app.connector.get_sync_connector()
                sync.open()  # refused (NotImplementedError) while a worker runs the app
                self._sync = sync

    def _worker_app(self) -> Any:
        """A synchronous app for jobs a running job queues (``jobs.reverify``).

        The worker opens :attr:`app` asynchronously, whose synchronous defer then refuses
        (``NotImplementedError``); a job handler queueing a follow-up job uses this one.
        """
        import procrastinate

        with self._lock:
            if self._follow_up is None:
                connector = procrastinate.SyncPsycopgConnector(conninfo=_conninfo(self.url))
                app = self.app.with_connector(connector)
                app.open()
                self._follow_up = app
            return self._follow_up

    def close(self) -> None:
        """Close the connections."""
        with self._lock:
            if self._sync is not None:
                self._sync.close()
                self._sync = None
            if self._follow_up is not None:
                self._follow_up.close()
                self._follow_up = None
        self.engine.dispose()

    # ------------------------------------------------------------------ producer
    @staticmethod
    def ledger_run_id(job_id: str) -> str:
        """The ledger run id of a ticket's job (``procrastinate-<n>``; audit tickets say ``n``).

        Args:
            job_id: A ticket's job id.

        Returns:
            The id its ledger run has (the audit bounds, ``jobs.audit_gate``, read it).
        """
        return job_id if job_id.startswith("procrastinate-") else f"procrastinate-{job_id}"

    def submit(self, snapshot: AuditSnapshot) -> AuditTicket:
        """Queue an audit, or join the waiting one with the same queueing lock.

        Args:
            snapshot: The audit's frozen input.

        Returns:
            The ticket (procrastinate job id).
        """
        from procrastinate.exceptions import AlreadyEnqueued

        self._open()
        key = snapshot.key
        try:
            job_id = self._task.configure(queueing_lock=key).defer(payload=snapshot.dumps())
        except AlreadyEnqueued:
            with self.engine.connect() as conn:
                row = conn.exec_driver_sql(
                    "SELECT id FROM procrastinate_jobs WHERE queueing_lock = %(k)s "
                    "AND status = 'todo' ORDER BY id LIMIT 1",
                    {"k": key},
                ).first()
            if row is None:  # it started meanwhile: queue one more
                return self.submit(snapshot)
            return AuditTicket(str(row[0]), True, self.backend)
        return AuditTicket(str(job_id), False, self.backend)

    def enqueue(self, kind: str, payload: str, *, key: str) -> AuditTicket:
        """Queue a job of ``kind``, or join the waiting one with the same queueing lock.

        Args:
            kind: The job kind (a worker's :class:`~.kinds.JobKinds` runs it).
            payload: The job's input, as text (JSON).
            key: The single-flight key (its queueing lock).

        Returns:
            The ticket (``procrastinate-<n>``).
        """
        from procrastinate.exceptions import AlreadyEnqueued

        try:
            try:
                self._open()
                job_id = self._job_task.configure(queueing_lock=key).defer(
                    kind=kind, payload=payload
                )
            except NotImplementedError:  # from a job of this queue's running (async) worker
                job_id = (
                    self._worker_app()
                    .configure_task(JOB_TASK_NAME, queueing_lock=key)
                    .defer(kind=kind, payload=payload)
                )
        except AlreadyEnqueued:
            with self.engine.connect() as conn:
                row = conn.exec_driver_sql(
                    "SELECT id FROM procrastinate_jobs WHERE queueing_lock = %(k)s "
                    "AND status = 'todo' ORDER BY id LIMIT 1",
                    {"k": key},
                ).first()
            if row is None:  # it started meanwhile: queue one more
                return self.enqueue(kind, payload, key=key)
            return AuditTicket(f"procrastinate-{row[0]}", True, self.backend)
        return AuditTicket(f"procrastinate-{job_id}", False, self.backend)

    # ------------------------------------------------------------------ consumer
    def run_worker(
        self, auditor: Auditor | JobKinds | Any, *, concurrency: int = 1, wait: bool = True
    ) -> None:
        """Run a procrastinate worker for every job kind (blocks; ``wait=False`` drains).

        Args:
            auditor: Runs each job: the component(s)' :class:`~.kinds.JobKinds`, or one
                component (an auditor, or an object with ``job_handlers()``).
            concurrency: Jobs run at once (each in a thread).
            wait: Keep waiting for jobs (False: return once the queue is empty).
        """
        self._kinds = JobKinds.of(auditor)
        self.ensure_schema()
        asyncio.run(self._serve(concurrency, wait))

    async def _serve(self, concurrency: int, wait: bool) -> None:
        async with self.app.open_async():
            await self.retry_stalled_async()
            sweeper = asyncio.create_task(self._sweep()) if wait else None
            try:
                await self.app.run_worker_async(
                    queues=[self.queue],
                    concurrency=concurrency,
                    wait=wait,
                    install_signal_handlers=wait
                    and threading.current_thread() is threading.main_thread(),
                    update_heartbeat_interval=self.heartbeat_seconds,
                    stalled_worker_timeout=self.stalled_seconds,
                )
            finally:
                if sweeper is not None:
                    sweeper.cancel()

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(self.stalled_seconds)
            try:
                await self.retry_stalled_async()
            except Exception as exc:
                logger.warning("MeClear stalled-job sweep failed: %s", redact(str(exc))[:300])

    async def retry_stalled_async(self) -> int:
        """Put back the jobs of workers silent for ``stalled_seconds`` (killed workers).

        Returns:
            How many jobs were put back.
        """
        stalled = await self.app.job_manager.get_stalled_jobs(
            queue=self.queue, seconds_since_heartbeat=self.stalled_seconds
        )
        count = 0
        for job in stalled:
            await self.app.job_manager.retry_job(job)
            count += 1
        return count

    def _run_checked(
        self, job: Any, kind: str | None, payload: str | None, other: dict[str, Any]
    ) -> str | None:
        """Run a job whose arguments this version reads; dead-letter one it cannot."""
        if kind is None or payload is None or other:
            given = [name for name, v in (("kind", kind), ("payload", payload)) if v is not None]
            reason = (
                f"job arguments {given + sorted(other)} were written by another "
                "meclear-integrations version (this worker reads kind and payload of task "
                f"{JOB_TASK_NAME!r}, payload of {TASK_NAME!r}); kept in the dead letters"
            )
            raw = payload if payload is not None else json.dumps(other, default=str)
            self._dead(f"procrastinate-{job.id}", reason, raw, str(kind or "unknown"))
        return self._run(job, str(kind), str(payload))

    def _run(self, job: Any, kind: str, payload: str) -> str | None:
        run_id = f"procrastinate-{job.id}"
        if self._kinds is None:
            raise RetryAudit("no job handlers in this worker")
        outcome = self._kinds.run(kind, payload, run_id)
        if outcome.state == "done":
            return outcome.ledger_run_id
        last = int(getattr(job, "attempts", 0)) + 1 >= self.max_attempts
        if outcome.state == "retry" and not last:
            raise RetryAudit(str(outcome.reason))
        self._dead(run_id, str(outcome.reason), payload, kind)
        return None  # pragma: no cover - _dead raises

    def _dead(self, run_id: str, reason: str, payload: str, kind: str = AUDIT) -> None:
        logger.warning("MeClear %s job %s dead-lettered: %s", kind, run_id, redact(reason)[:300])
        with write_transaction(self.engine) as conn:
            exists = conn.execute(
                select(dead_letters.c.job_id).where(dead_letters.c.job_id == run_id)
            ).first()
            if exists is None:
                conn.execute(
                    dead_letters.insert().values(
                        job_id=run_id,
                        reason=redact(reason)[:2000],
                        payload=payload,
                        created_at=time.time(),
                    )
                )
        if self._kinds is not None:
            self._kinds.dead(kind, payload, run_id, reason)
        raise _DeadAudit(reason)

    # ------------------------------------------------------------------ reading
    def get(self, job_id: str) -> JobStatus:
        """One job's state as the job table names it (the audit bounds read it).

        Args:
            job_id: A ticket's job id (``n`` or ``procrastinate-<n>``).

        Returns:
            ``queued``, ``running``, ``done`` or ``dead`` (failed, cancelled, aborted).

        Raises:
            KeyError: No such job.
        """
        number = self.ledger_run_id(job_id).removeprefix("procrastinate-")
        if not number.isdigit():
            raise KeyError(job_id)
        with self.engine.connect() as conn:
            row = conn.exec_driver_sql(
                "SELECT status::text FROM procrastinate_jobs WHERE id = %(i)s",
                {"i": int(number)},
            ).first()
        if row is None:
            raise KeyError(job_id)
        states = {"todo": "queued", "doing": "running", "succeeded": "done"}
        return JobStatus(job_id, states.get(str(row[0]), "dead"))

    def stats(self) -> dict[str, int]:
        """Jobs of this queue per procrastinate status, and the dead letters."""
        with self.engine.connect() as conn:
            rows = conn.exec_driver_sql(
                "SELECT status::text, count(*) FROM procrastinate_jobs "
                "WHERE queue_name = %(q)s GROUP BY status",
                {"q": self.queue},
            ).all()
            dead = conn.execute(select(dead_letters.c.job_id)).all()
        counts = {str(status): int(n) for status, n in rows}
        counts["dead_letters"] = len(dead)
        return counts

    def dead_letters(self) -> list[tuple[str, str]]:
        """``(run id, reason)`` of every dead-lettered audit."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(dead_letters.c.job_id, dead_letters.c.reason)).all()
        return [(str(a), str(b)) for a, b in rows]
