"""Recording decisions: one clearance report becomes one run's rows, in one transaction.

:meth:`Recording.record` (and ``record_many`` for bulk loads) writes the run, its memories
and candidates, folds its verdicts into the per memory and question state
(``scope_state``) and indexes its cleared texts (``content``). Texts pass through
``core.redaction`` first (``rows``).
"""

from __future__ import annotations

import dataclasses
import functools
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from ..core.concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..core.errors import ConfigurationError
from ..core.memory import Memory
from ..core.report import ClearanceReport
from . import schema as t
from .base import LedgerLookupError, inserted_key
from .content import HarmTextRow, harm_text_rows, insert_harm_texts, insert_harm_texts_many
from .database import read_transaction, write_transaction
from .feedback import FeedbackLog
from .records import RunMode, RunRecord, SuccessSignal
from .review import carrier_payload, with_suspects
from .rows import candidate_rows, context_of, memory_rows, run_mode, safe_payload, safe_text
from .scope import lexical_signature, name_signature
from .scope_state import Observation, RunVerdicts, apply_run, apply_runs, observe

__all__ = ["Recording"]


def _kept_reference(reference: Any, success_signal: str, store_text: bool) -> str | None:
    """The reference answer a run keeps: redacted, for a reference run of a text ledger."""
    if not store_text or success_signal != "reference" or not isinstance(reference, str):
        return None
    return safe_text(reference, 100_000) or None


@dataclass(frozen=True, slots=True)
class _Prepared:
    """One decision's rows, ready to write (:meth:`Recording.record`)."""

    run: dict[str, Any]
    memories: list[dict[str, Any]]
    candidates: list[dict[str, Any]]
    observations: list[Observation]
    signature: list[str] | None
    embedding: list[float] | None
    given_id: bool
    names: list[str] | None = None
    harm_texts: list[HarmTextRow] = field(default_factory=list)
    """The content-index rows of its cleared memories (``content``)."""


@dataclass(frozen=True)
class _ReportParts:
    """What a run's rows take from its report alone (``Recording._report_parts``)."""

    config: dict[str, Any]
    cost: dict[str, Any]
    extra: dict[str, Any]
    memories: list[dict[str, Any]]
    candidates: list[dict[str, Any]]
    observations: list[Observation]


class Recording(FeedbackLog):
    """Appends decisions (a feedback replay's authority is read from ``feedback``)."""

    def record(
        self,
        report: ClearanceReport,
        *,
        query: str,
        context: Sequence[Memory] | None = None,
        origin: str = "live",
        success_signal: SuccessSignal = "judge",
        agent_model: str | None = None,
        judge_model: str | None = None,
        model_calls: int | None = None,
        trace_run_id: str | None = None,
        trace_system: str | None = None,
        trigger: str | None = None,
        trigger_reason: str | None = None,
        replay_of: str | None = None,
        feedback_id: str | None = None,
        guided_by: str = "ledger",
        extra: dict[str, Any] | None = None,
        run_id: str | None = None,
        query_embedding: Sequence[float] | None = None,
        reference: str | None = None,
    ) -> RunRecord:
        """Append one decision (one transaction) and return it as recorded.

        The same transaction updates the per memory and question state the request path
        reads (``scope_state``). With a caller-given ``run_id`` the write is idempotent:
        recording a run id that is already stored changes nothing and returns the stored
        run (a job retried after its worker died writes no duplicate and no torn row).

        Args:
            report: The engine's clearance report (any status, skips included).
            query: The query text (hashed; stored redacted only with ``store_text``).
            context: The memories in retrieval order (default: rebuilt from the report).
            origin: ``live``, ``replay`` or another label of where the decision was made.
            success_signal: What the judge decided against (``judge``, ``reference``...).
            agent_model: The agent model's label.
            judge_model: The judge model's label.
            model_calls: Agent and judge calls the decision cost (default: the report's
                ``cost.model_calls`` when it has one).
            trace_run_id: The tracing run id (LangSmith / LlamaIndex), for feedback lookup.
            trace_system: The tracing system of ``trace_run_id``.
            trigger: The trigger policy that ran or skipped the clearance.
            trigger_reason: The policy's reason code.
            replay_of: The run a replay answers.
            feedback_id: The feedback a replay answers.
            guided_by: Who supplied the report's prior candidate, ``"ledger"`` or
                ``"feedback"`` (sets the mode of a prior run).
            extra: Further JSON-ready fields kept with the run.
            run_id: The run's id (at most 36 characters; default: a new UUID). Recording
                an id already stored is a no-op that returns the stored run.
            query_embedding: The question's embedding, kept with the verified verdicts so
                that later questions like it are matched by cosine (``scope``).
            reference: The reference answer a ``success_signal="reference"`` run was judged
                against (also read from ``extra["reference"]``). Kept, redacted, in the
                run's ``extra`` only when the ledger stores texts (``store_text=True``), so
                a settlement it made can be re-verified later (``ledger.reverify``);
                dropped otherwise, like every other text.

        Returns:
            The run as recorded, with its memories and candidates.

        Raises:
            ConfigurationError: ``run_id`` is empty or longer than 36 characters.

        Example:
            >>> from meclear_integrations.ledger import HarmLedger
            >>> from meclear_integrations.simulation import redundant_harm_example
            >>> from meclear_integrations.core import MeClearEngine
            >>> case = redundant_harm_example()
            >>> report = MeClearEngine().clear(case.memories, case.evaluator())
            >>> with HarmLedger("sqlite://") as ledger:
            ...     run = ledger.record(report, query=case.query)
            ...     sorted(run.cleared_ids)
            ['f1', 'f2']
        """
        # the keyword arguments as given: nothing is assigned before this line
        kwargs = {k: v for k, v in locals().items() if k not in ("self", "report")}
        return run_steps(self._recording(report, kwargs))

    def record_many(self, entries: Sequence[tuple[ClearanceReport, dict[str, Any]]]) -> int:
        """Append many decisions in one transaction (bulk loads, benchmarks, imports).

        Each entry is ``(report, keyword arguments of record)``; the rows and the per memory
        and question state are exactly what :meth:`record` writes, in order. Entries with a
        ``run_id`` already stored are skipped.

        Args:
            entries: The decisions, oldest first.

        Returns:
            The number of runs written.
        """
        shared: dict[tuple[Any, ...], _ReportParts] = {}
        prepared = [self._prepare(report, **kwargs, shared=shared) for report, kwargs in entries]
        with write_transaction(self.engine) as conn:
            fresh = [
                p
                for p in prepared
                if not p.given_id or self._stored_run(conn, p.run["run_id"]) is None
            ]
            if not fresh:
                return 0
            keys = (
                conn.execute(
                    t.runs.insert().returning(t.runs.c.id, sort_by_parameter_order=True),
                    [p.run for p in fresh],
                )
                .scalars()
                .all()
            )
            memories = [
                {**r, "run_pk": pk} for p, pk in zip(fresh, keys, strict=True) for r in p.memories
            ]
            cands = [
                {**r, "run_pk": pk} for p, pk in zip(fresh, keys, strict=True) for r in p.candidates
            ]
            if memories:
                conn.execute(t.run_memories.insert(), memories)
            if cands:
                conn.execute(t.candidates.insert(), cands)
            apply_runs(
                conn,
                self.namespace,
                [
                    RunVerdicts(
                        p.run["query_id"],
                        p.run["run_id"],
                        p.run["created_at"],
                        p.signature,
                        p.embedding,
                        p.observations,
                        p.names,
                    )
                    for p in fresh
                ],
            )
            insert_harm_texts_many(
                conn,
                self.namespace,
                [(p.run["run_id"], p.run["created_at"], p.harm_texts) for p in fresh],
            )
        return len(fresh)

    async def arecord(self, report: ClearanceReport, **kwargs: Any) -> RunRecord:
        """:meth:`record`'s steps, database work in worker threads (arguments, result, errors)."""
        return await arun_steps(self._recording(report, kwargs))

    def _recording(self, report: ClearanceReport, kwargs: dict[str, Any]) -> Steps[RunRecord]:
        """:meth:`record`'s steps: its rows (reading a replay's feedback), then their write."""
        prepared = yield Call(functools.partial(self._prepare, report, **kwargs))
        recorded: RunRecord = yield Call(
            functools.partial(self._insert, prepared, kwargs.get("run_id"))
        )
        return recorded

    def _insert(self, prepared: _Prepared, run_id: str | None) -> RunRecord:
        """Write one prepared decision (one transaction); a stored ``run_id`` is returned as is."""
        try:
            with write_transaction(self.engine) as conn:
                if run_id is not None:
                    stored = self._stored_run(conn, run_id)
                    if stored is not None:
                        return stored
                self._write(conn, prepared)
        except IntegrityError:
            if run_id is None:
                raise
            with read_transaction(self.engine) as conn:  # a concurrent writer stored it first
                stored = self._stored_run(conn, run_id)
            if stored is None:
                raise
            return stored
        return self._run_record(prepared.run, prepared.memories, prepared.candidates)

    def _prepare(
        self,
        report: ClearanceReport,
        *,
        query: str,
        context: Sequence[Memory] | None = None,
        origin: str = "live",
        success_signal: SuccessSignal = "judge",
        agent_model: str | None = None,
        judge_model: str | None = None,
        model_calls: int | None = None,
        trace_run_id: str | None = None,
        trace_system: str | None = None,
        trigger: str | None = None,
        trigger_reason: str | None = None,
        replay_of: str | None = None,
        feedback_id: str | None = None,
        guided_by: str = "ledger",
        extra: dict[str, Any] | None = None,
        run_id: str | None = None,
        query_embedding: Sequence[float] | None = None,
        reference: str | None = None,
        shared: dict[tuple[Any, ...], _ReportParts] | None = None,
    ) -> _Prepared:
        """The rows :meth:`record` writes for one decision (``shared``: see _report_parts)."""
        if run_id is not None and not (isinstance(run_id, str) and 0 < len(run_id) <= 36):
            raise ConfigurationError("run_id must be a non-empty string of at most 36 characters")
        memories = context_of(report, context)
        if extra is not None and "reference" in extra:
            extra = dict(extra)
            given = extra.pop("reference")
            reference = reference if reference is not None else given
        if model_calls is None:
            model_calls = getattr(report.cost, "model_calls", None)
        new_id = run_id if run_id is not None else str(uuid.uuid4())
        query_id = self.query_id(query)
        now = self._now()
        mode = run_mode(report, guided_by)
        parts = self._report_parts(report, memories, mode, success_signal, shared)
        if feedback_id is not None and success_signal == "feedback":
            parts = self._feedback_authority(parts, feedback_id)
        run: dict[str, Any] = {
            "run_id": new_id,
            "namespace": self.namespace,
            "created_at": now,
            "query_id": query_id,
            "query_text": safe_text(query, 100_000) if self.store_text else None,
            "origin": safe_text(origin, 20),
            "mode": mode,
            "status": report.status,
            "status_reason": safe_text(report.status_reason),
            "recovered": bool(report.recovered),
            "baseline_value": report.baseline_value,
            "final_value": report.final_value,
            "success_signal": success_signal,
            "agent_model": safe_text(agent_model),
            "judge_model": safe_text(judge_model),
            "model_calls": model_calls,
            "evaluator_calls": report.cost.evaluator_calls,
            "coalitions": report.cost.coalitions,
            "rounds": report.cost.rounds,
            "wall_seconds": report.cost.wall_seconds,
            "cost": parts.cost,
            "estimator": report.estimator,
            "clearance_search": report.clearance_search,
            "harm_tolerance": report.config.harm_tolerance,
            "trace_run_id": safe_text(trace_run_id, 100),
            "trace_system": safe_text(trace_system, 40),
            "trigger": safe_text(trigger),
            "trigger_reason": safe_text(trigger_reason),
            "replay_of": replay_of,
            "feedback_id": feedback_id,
            "config": parts.config,
            "extra": parts.extra
            if extra is None
            else safe_payload(with_suspects({**extra, **carrier_payload(report)}, report)),
        }
        kept = _kept_reference(reference, success_signal, self.store_text)
        if kept is not None:
            run["extra"] = {**(run["extra"] or {}), "reference": kept}
        signature = names = None
        if parts.observations:
            signature = lexical_signature(query, key=self._query_key)
            names = name_signature(query, key=self._query_key)
        embedding = [float(x) for x in query_embedding] if query_embedding is not None else None
        return _Prepared(
            run,
            parts.memories,
            parts.candidates,
            parts.observations,
            signature,
            embedding,
            run_id is not None,
            names,
            harm_text_rows(memories, parts.observations),
        )

    def _feedback_authority(self, parts: _ReportParts, feedback_id: str) -> _ReportParts:
        """An end user's feedback replay settles nothing (``feedback``, ``unconfirmed``).

        Its clearance was verified against that user's correction, which nobody vouched
        for: its harm is offered to the loop's next run of the question (which verifies it
        with its own signal before using it) but never settled, and background requests do
        not withhold it until such a run confirms it.
        """
        try:
            authority = self.get_feedback(feedback_id).authority
        except LedgerLookupError:
            authority = "end_user"  # a replay of feedback this ledger does not hold
        if authority != "end_user" or not parts.observations:
            return parts
        unsettled = [dataclasses.replace(o, settled=False) for o in parts.observations]
        return dataclasses.replace(parts, observations=unsettled)

    def unconfirmed(self, run_ids: Iterable[str]) -> set[str]:
        """Which of ``run_ids`` are end users' feedback replays (harm nobody vouched for).

        A background request does not withhold a harm whose latest verified run is one of
        them: the question's next audit verifies it with the loop's own signal first.

        Args:
            run_ids: Ledger run ids (e.g. ``ScopedHarm.run_id``).

        Returns:
            The subset recorded as replays of end-user feedback.
        """
        wanted = sorted({str(i) for i in run_ids if i})
        if not wanted:
            return set()
        r, f = t.runs, t.feedback
        query = (
            select(r.c.run_id)
            .join(f, f.c.feedback_id == r.c.feedback_id)
            .where(
                r.c.namespace == self.namespace,
                r.c.run_id.in_(wanted),
                r.c.success_signal == "feedback",
                or_(f.c.authority.is_(None), f.c.authority == "end_user"),
            )
        )
        with read_transaction(self.engine) as conn:
            return {str(row[0]) for row in conn.execute(query)}

    def _report_parts(
        self,
        report: ClearanceReport,
        memories: Sequence[Memory],
        mode: RunMode,
        success_signal: SuccessSignal,
        shared: dict[tuple[Any, ...], _ReportParts] | None,
    ) -> _ReportParts:
        """The rows and payloads a run takes from its report (memoised within a bulk load).

        Within one :meth:`record_many` call the same report recorded for the same context
        (a benchmark preload, an import of repeated decisions) is redacted and turned into
        rows once; the rows are copied on insert, so sharing them is safe.
        """
        key = (
            id(report),
            tuple((m.id, m.content) for m in memories),
            mode,
            success_signal,
        )
        if shared is not None and key in shared:
            return shared[key]
        mem_rows = memory_rows(
            report, memories, namespace=self.namespace, store_text=self.store_text
        )
        cand_rows = candidate_rows(report)
        parts = _ReportParts(
            config=safe_payload(report.config.model_dump(mode="json")),
            cost=safe_payload(report.cost.model_dump(mode="json")),
            extra=safe_payload(with_suspects(dict(carrier_payload(report)), report)),
            memories=mem_rows,
            candidates=cand_rows,
            observations=observe(
                status=report.status,
                recovered=bool(report.recovered),
                mode=mode,
                harm_tolerance=report.config.harm_tolerance,
                memories=mem_rows,
                candidates=cand_rows,
                carriers=_carrier_ids(report),
                success_signal=success_signal,
            ),
        )
        if shared is not None:
            shared[key] = parts
        return parts

    def _write(self, conn: Connection, p: _Prepared) -> None:
        """Insert one prepared decision and fold it into the state (inside a transaction)."""
        pk = inserted_key(conn.execute(t.runs.insert().values(**p.run)))
        if p.memories:
            conn.execute(t.run_memories.insert(), [{**r, "run_pk": pk} for r in p.memories])
        if p.candidates:
            conn.execute(t.candidates.insert(), [{**r, "run_pk": pk} for r in p.candidates])
        apply_run(
            conn,
            namespace=self.namespace,
            query_id=p.run["query_id"],
            run_id=p.run["run_id"],
            at=p.run["created_at"],
            signature=p.signature,
            embedding=p.embedding,
            observations=p.observations,
            names=p.names,
        )
        insert_harm_texts(conn, self.namespace, p.run["run_id"], p.run["created_at"], p.harm_texts)


def _carrier_ids(report: ClearanceReport) -> list[str]:
    """Ids the report marks as carriers of a redundant fault, if it has the field."""
    carriers = getattr(report, "carriers", None) or ()
    out = []
    for item in carriers:
        if isinstance(item, str):
            out.append(item)
        else:
            found = getattr(item, "memory_id", None) or getattr(item, "id", None)
            if found is not None:
                out.append(str(found))
    return out
