"""Bounded audits: at most one pending audit per question, and backoff after each one.

A background query the trigger sends to audit asks :class:`AuditGate` first. Per question
scope (the ledger's query id: the same question, however often it is asked) one row in
``meclear_audit_gates`` (beside the ledger's tables, created on first use) says:

- **pending**: an audit was queued and has not finished: the query joins it (its ticket,
  ``joined: true``), whatever its retrieved context; nothing new is queued. (In the
  milliseconds while the first submission is in flight, a concurrent ask goes to the
  queue, whose single flight joins the same question and context.)
- **backoff**: the last audit finished less than ``audit_backoff_seconds * 2**n`` ago, n
  being the audits in a row that did not fix the question (its job ended without a
  verified ledger run: skipped, dead, not recovered). A fixed question waits the base
  backoff before a confirming audit; one the judge is fooled on waits twice as long after
  every further attempt.
- **daily cap**: at most ``audits_per_question_per_day`` audits per question per UTC day.

A pending audit is finished when the ledger holds its verified run (``run_id`` = the job
id), when the queue reports the job ``done`` or ``dead`` (``JobStore.get``), or, when the
queue cannot tell, after ``audit_pending_seconds`` (a lost job blocks nothing for longer).
The decision and the reservation are one write transaction, so concurrent requests (and
processes) for one question queue one audit. A gate that fails never fails the query: the
audit is submitted as before and ``notes`` says so.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import Column, Float, Integer, MetaData, String, Table, insert, select, update
from sqlalchemy.engine import Connection

from ..ledger.database import write_transaction

__all__ = ["AuditGate", "GateDecision", "audit_gate", "gates"]

_META = MetaData()
gates = Table(
    "meclear_audit_gates",
    _META,
    Column("namespace", String(200), primary_key=True),
    Column("query_id", String(64), primary_key=True),
    Column("day", String(10), nullable=False),
    Column("attempts_today", Integer, nullable=False, default=0),
    Column("attempts", Integer, nullable=False, default=0),
    Column("unfixed_streak", Integer, nullable=False, default=0),
    Column("pending_job_id", String(64), nullable=True),
    Column("pending_since", Float, nullable=True),
    Column("finished_at", Float, nullable=True),
)
"""One row per namespace and question (module docstring)."""


@dataclass(frozen=True, slots=True)
class GateDecision:
    """What the gate decided for one triggered background query."""

    action: Literal["submit", "join", "backoff"]
    job_id: str | None = None
    """``join``: the pending audit's job id (None: its submission is still in flight; the
    query submits to the queue, whose single flight joins an identical question)."""
    until: float | None = None
    """``backoff``: when the next audit may be queued (epoch seconds)."""
    reason: str | None = None
    """``backoff``: ``backoff`` or ``daily_cap``."""
    token: str | None = None
    """``submit``: the reservation to confirm with the job id (:meth:`AuditGate.submitted`)."""

    def note(self) -> str:
        """The ``notes["audit"]`` text of a query that queued nothing."""
        if self.action == "join":
            return f"joined the pending audit {self.job_id} of this question"
        when = datetime.fromtimestamp(self.until or 0.0, UTC).isoformat(timespec="seconds")
        if self.reason == "daily_cap":
            return f"audit budget of this question spent for today; next audit after {when}"
        return f"audits of this question back off; next audit after {when}"


class AuditGate:
    """The per-question audit bookkeeping of one ledger (module docstring).

    Args:
        ledger: The component's ``HarmLedger`` (its engine, namespace and runs).
        queue: The audit queue (asked for a pending job's state when it can tell).
        per_day: Audits per question per UTC day.
        backoff_seconds: Base wait after a finished audit (doubled per unfixed audit).
        pending_seconds: A pending audit older than this no longer blocks.
        clock: Epoch seconds (inject in tests).
        scope: Another kind of job bounded the same way, in rows of its own
            (namespace ``<namespace>:<scope>``; ``jobs.reverify``): a job of it that ends
            ``done`` counts as fixing the question (its result is no ledger run of the
            job's id).
    """

    def __init__(
        self,
        ledger: Any,
        queue: Any,
        *,
        per_day: int,
        backoff_seconds: float,
        pending_seconds: float,
        clock: Callable[[], float] | None = None,
        scope: str | None = None,
    ) -> None:
        import time

        self.ledger, self.queue = ledger, queue
        self.per_day, self.backoff, self.pending_seconds = per_day, backoff_seconds, pending_seconds
        self.clock = clock or time.time
        self.namespace = str(getattr(ledger, "namespace", "default"))
        if scope is not None:
            self.namespace = f"{self.namespace}:{scope}"
        self.done_fixes = scope is not None
        _META.create_all(ledger.engine, checkfirst=True)

    def admit(self, query_id: str) -> GateDecision:
        """Decide whether a triggered query queues an audit, joins one, or backs off.

        A ``submit`` decision reserves the pending slot: confirm it with :meth:`submitted`
        or free it with :meth:`released`.

        Args:
            query_id: The question's ledger query id.

        Returns:
            The decision.
        """
        now = self.clock()
        day = datetime.fromtimestamp(now, UTC).date().isoformat()
        with write_transaction(self.ledger.engine) as conn:
            row = self._row(conn, query_id, day)
            if row["pending_job_id"] is not None:
                fixed = self._finished(row, now)
                if fixed is None:
                    pending = str(row["pending_job_id"])
                    job_id = None if pending.startswith("reserved:") else pending
                    return GateDecision("join", job_id=job_id)
                streak = 0 if fixed else row["unfixed_streak"] + 1
                row.update(pending_job_id=None, pending_since=None, finished_at=now)
                row["unfixed_streak"] = streak
            if row["day"] != day:
                row.update(day=day, attempts_today=0)
            decision = self._limit(row, now, day)
            if decision is None:
                token = f"reserved:{uuid.uuid4().hex}"
                row.update(pending_job_id=token, pending_since=now)
                row["attempts_today"] += 1
                row["attempts"] += 1
                decision = GateDecision("submit", token=token)
            self._save(conn, query_id, row)
        return decision

    def submitted(self, query_id: str, token: str, job_id: str) -> None:
        """Confirm a reservation: the queued audit's job id is the pending one."""
        self._swap(query_id, token, job_id)

    def released(self, query_id: str, token: str) -> None:
        """Free a reservation whose submission failed (the attempt is not counted)."""
        with write_transaction(self.ledger.engine) as conn:
            row = self._row(conn, query_id, None)
            if row["pending_job_id"] == token:
                row.update(pending_job_id=None, pending_since=None)
                row["attempts_today"] = max(0, row["attempts_today"] - 1)
                row["attempts"] = max(0, row["attempts"] - 1)
                self._save(conn, query_id, row)

    def state(self, query_id: str) -> dict[str, Any] | None:
        """The stored row of ``query_id`` (None: never audited), for operators and tests."""
        with self.ledger.engine.connect() as conn:
            found = conn.execute(select(gates).where(*self._key(query_id))).mappings().first()
        return dict(found) if found is not None else None

    # ------------------------------------------------------------------ internals
    def _limit(self, row: dict[str, Any], now: float, day: str) -> GateDecision | None:
        if row["attempts_today"] >= self.per_day:
            tomorrow = datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp() + 86400.0
            return GateDecision("backoff", until=tomorrow, reason="daily_cap")
        finished = row["finished_at"]
        if finished is not None:
            until = finished + self.backoff * 2 ** min(row["unfixed_streak"], 16)
            if now < until:
                return GateDecision("backoff", until=until, reason="backoff")
        return None

    def _finished(self, row: dict[str, Any], now: float) -> bool | None:
        """None while the pending audit runs; else whether it fixed the question."""
        job_id = str(row["pending_job_id"])
        age = now - float(row["pending_since"] or now)
        if job_id.startswith("reserved:"):  # a submission in flight (or its process died)
            return None if age < self.pending_seconds else False
        run = self._ledger_run(job_id)
        if run is not None:
            return bool(run.status == "complete" and run.recovered)
        state = self._job_state(job_id)
        if state in ("done", "dead"):
            return self.done_fixes and state == "done"
        if state is None and age >= self.pending_seconds:
            return False
        return None

    def _ledger_run(self, job_id: str) -> Any:
        of = getattr(self.queue, "ledger_run_id", None)  # a queue whose run ids differ
        run_id = str(of(job_id)) if callable(of) else job_id
        try:
            run = self.ledger.find_run(run_id)
        except Exception:
            return None
        return run if getattr(run, "run_id", None) == run_id else None

    def _job_state(self, job_id: str) -> str | None:
        get = getattr(self.queue, "get", None)
        if get is None:
            return None
        try:
            return str(get(job_id).state)
        except Exception:
            return None

    def _key(self, query_id: str) -> tuple[Any, ...]:
        return (gates.c.namespace == self.namespace, gates.c.query_id == query_id)

    def _row(self, conn: Connection, query_id: str, day: str | None) -> dict[str, Any]:
        query = select(gates).where(*self._key(query_id))
        if conn.dialect.name == "postgresql":
            query = query.with_for_update()
        found = conn.execute(query).mappings().first()
        if found is not None:
            return dict(found)
        fresh: dict[str, Any] = {
            "namespace": self.namespace,
            "query_id": query_id,
            "day": day or "",
            "attempts_today": 0,
            "attempts": 0,
            "unfixed_streak": 0,
            "pending_job_id": None,
            "pending_since": None,
            "finished_at": None,
        }
        if conn.dialect.name in ("postgresql", "sqlite"):
            from sqlalchemy.dialects import postgresql, sqlite

            module: Any = postgresql if conn.dialect.name == "postgresql" else sqlite
            conn.execute(module.insert(gates).values(**fresh).on_conflict_do_nothing())
        else:  # pragma: no cover - other backends are not supported by the ledger
            conn.execute(insert(gates).values(**fresh))
        return dict(conn.execute(query).mappings().one())

    def _save(self, conn: Connection, query_id: str, row: dict[str, Any]) -> None:
        values = {k: v for k, v in row.items() if k not in ("namespace", "query_id")}
        conn.execute(update(gates).where(*self._key(query_id)).values(**values))

    def _swap(self, query_id: str, token: str, job_id: str) -> None:
        with write_transaction(self.ledger.engine) as conn:
            conn.execute(
                update(gates)
                .where(*self._key(query_id), gates.c.pending_job_id == token)
                .values(pending_job_id=job_id)
            )


def audit_gate(loop: Any, queue: Any) -> AuditGate | None:
    """The audit bounds of a background component's ``loop`` settings and queue.

    Args:
        loop: The component's :class:`~.settings.Loop`.
        queue: Its audit queue.

    Returns:
        The gate on the ledger's database, or None for a ledger-like object without one.
    """
    if getattr(loop.ledger, "engine", None) is None:
        return None
    return AuditGate(
        loop.ledger,
        queue,
        per_day=loop.audits_per_question_per_day,
        backoff_seconds=loop.audit_backoff_seconds,
        pending_seconds=loop.audit_pending_seconds,
    )
