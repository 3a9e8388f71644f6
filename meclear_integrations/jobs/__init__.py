"""Background audits that are not lost: a durable job table, workers, single flight.

In ``mode="background"`` a component answers from what the ledger already proved and
queues the audit of a triggered query as a job holding its frozen snapshot
(:class:`AuditSnapshot`); a worker runs the normal verified clearance and records the
result in the ledger under the job id, where the next request finds it.

Two queues, one contract (:class:`AuditQueue`, at-least-once delivery, idempotent ledger
writes):

- :class:`JobStore` (embedded default, the ``ledger`` extra): a table beside the ledger
  (SQLite file or PostgreSQL) with leases, backoff, dead letters and a partial unique
  index for single flight; the component starts a :class:`WorkerPool` of threads with
  itself, so a plain application runs unchanged with no server.
- :class:`~.procrastinate_queue.ProcrastinateQueue` (the ``jobs`` extra) for several
  replicas or machines. Why procrastinate rather than Celery or Dramatiq: the ledger
  already runs on PostgreSQL for replicas, and procrastinate keeps its queue in that same
  PostgreSQL (``LISTEN/NOTIFY``, ``SELECT ... FOR UPDATE SKIP LOCKED``), so a team adds no
  broker to deploy, secure and monitor (Celery and Dramatiq need Redis or RabbitMQ); a job
  is a row a transaction can see, it supports psycopg 3 (the ledger's driver), queueing
  locks give single flight across machines, retry strategies give exponential backoff, and
  worker heartbeats let a stalled job (``kill -9``) be retried by another worker.

``meclear worker`` runs workers for either queue.
"""

from .protocol import Auditor, AuditOutcome, AuditQueue, AuditTicket

__all__ = [
    "AuditOutcome",
    "AuditQueue",
    "AuditTicket",
    "AuditWorker",
    "Auditor",
    "JobStore",
    "ProcrastinateQueue",
    "WorkerPool",
]


def __getattr__(name: str) -> object:
    """The SQL-backed parts load SQLAlchemy on first use only."""
    if name == "JobStore":
        from .store import JobStore

        return JobStore
    if name == "ProcrastinateQueue":
        from .procrastinate_queue import ProcrastinateQueue

        return ProcrastinateQueue
    if name in ("AuditWorker", "WorkerPool"):
        from . import worker

        return getattr(worker, name)
    raise AttributeError(name)
