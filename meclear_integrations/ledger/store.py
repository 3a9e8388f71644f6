"""HarmLedger: the append-only record of every clearance decision, and what it is used for.

``HarmLedger()`` opens (and creates) an SQLite file, ``HarmLedger("postgresql://...")`` a
PostgreSQL database shared by many replicas (see ``database``); the schema is brought up to
date on open (``migrations``). Every method is safe to call from many threads and
processes at once; ``a``-prefixed twins run the same work in a worker thread for asyncio
callers.

What it records (:meth:`record`): per decision the time, the query id (a hash) and, unless
``store_text=False`` (the privacy switch), the redacted query and memory texts, every
memory's id, content hash, LOO effect, Shapley value and interval, harmful and cleared
flags, the verified candidates, recovery, the success signal, model names, cost and the
tracing run id. Texts (queries, corrections, reasons, model names, free-form extras) pass
through ``core.redaction`` first: no API keys.

What it is used for: :meth:`scoped_harm` (memories verified harmful for this question or
one like it, read in O(K) from state kept up to date on write, ``scope_state``) and
:meth:`prior_candidate` (the same, offered to the engine as a prior candidate),
:meth:`feedback`, :meth:`restore` and :meth:`exonerate`, :meth:`review` (proposals for a
person) and :meth:`history`. The history tables are append-only; only the derived state
table is updated in place. Nothing is ever deleted, neither in the ledger nor in any
memory store.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from os import PathLike
from typing import Any

from sqlalchemy import exists, func, or_, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from ..core.errors import ConfigurationError, ConfigurationTypeError, MeClearError
from ..core.memory import Memory
from ..core.prior import PriorCandidate
from ..core.report import ClearanceReport
from ..runtime.hashing import content_hash, query_hash
from . import schema as t
from .content import (
    HarmTextRow,
    harm_text_rows,
    insert_harm_texts,
    insert_harm_texts_many,
    load_active_any_id,
)
from .database import (
    create_ledger_engine,
    display_url,
    ledger_url,
    read_transaction,
    single_read,
    write_transaction,
)
from .migrations import check_version, migrate
from .proof import load_harm_facts
from .records import (
    FEEDBACK_AUTHORITIES,
    CandidateRecord,
    FeedbackAuthority,
    FeedbackRecord,
    MemoryEvent,
    MemoryHistory,
    MemoryObservation,
    MemoryRecord,
    RunMode,
    RunRecord,
    SuccessSignal,
)
from .review import (
    CarrierProposal,
    FramedCandidate,
    QueryEvidence,
    ReviewProposal,
    carrier_payload,
    carrier_proposals,
    rank_proposals,
    set_aside_framed,
    single_query_clearances,
    with_suspects,
)
from .rows import candidate_rows, context_of, memory_rows, run_mode, safe_payload, safe_text
from .scope import (
    EMBEDDING_THRESHOLD,
    LEXICAL_THRESHOLD,
    ScopedHarm,
    lexical_signature,
    name_signature,
    question_similarity,
)
from .scope_state import (
    Observation,
    RunVerdicts,
    apply_run,
    apply_runs,
    observe,
    restore_scopes,
)
from .settlement import settlement_counts, settlements
from .tombstones import retired_memory_ids

__all__ = ["HarmLedger", "LedgerLookupError"]

Clock = Callable[[], datetime]
_CHUNK = 400
"""Ids per ``IN (...)`` list."""


@dataclass(frozen=True, slots=True)
class _Prepared:
    """One decision's rows, ready to write (:meth:`HarmLedger.record`)."""

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
    """What a run's rows take from its report alone (``HarmLedger._report_parts``)."""

    config: dict[str, Any]
    cost: dict[str, Any]
    extra: dict[str, Any]
    memories: list[dict[str, Any]]
    candidates: list[dict[str, Any]]
    observations: list[Observation]


class LedgerLookupError(MeClearError, KeyError):
    """No run, query or feedback with the given id in this ledger namespace."""

    def __str__(self) -> str:  # KeyError's repr-quoting is unhelpful in messages
        return str(self.args[0]) if self.args else ""


def _utc(value: datetime) -> datetime:
    """SQLite returns naive datetimes: they are UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _chunks(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


class HarmLedger:
    """The harm ledger (module docstring).

    Args:
        url: A SQLAlchemy URL, a path (SQLite) or None (``MECLEAR_LEDGER_URL``, else
            ``./meclear-ledger.db``).
        namespace: Separates stores or applications sharing one database (memory ids are
            only unique within a store).
        store_text: Keep the redacted query and memory texts (the default), so review shows
            each memory's text and its questions and a feedback replays from its run alone.
            False is the privacy switch: only hashes are kept; review then reads texts from
            your store (``get_documents=``) and replay needs ``query=`` (or the trace) and
            your store's texts.
        query_key: Keys the query hash (HMAC) so short questions cannot be guessed back.
        create: False refuses a database that is not at the current schema version instead
            of migrating it.
        clock: Returns the current UTC time (inject it in tests).
        lexical_threshold: Jaccard of two questions' content words at or above which a
            harm verified on one applies to the other, when their names also agree
            (``scope``).
        embedding_threshold: The cosine threshold when both questions have embeddings.
        **engine_kwargs: Passed to SQLAlchemy's ``create_engine``.

    Raises:
        ConfigurationError: ``namespace`` is empty or a threshold is outside (0, 1].
        SchemaVersionError: The database is at another schema version and cannot be
            migrated (or ``create=False``).

    Example:
        >>> from meclear_integrations.ledger import HarmLedger
        >>> with HarmLedger("sqlite://", namespace="support-bot") as ledger:  # in memory
        ...     ledger.namespace
        'support-bot'
    """

    def __init__(
        self,
        url: str | PathLike[str] | None = None,
        *,
        namespace: str = "default",
        store_text: bool = True,
        query_key: bytes | str | None = None,
        create: bool = True,
        clock: Clock | None = None,
        lexical_threshold: float = LEXICAL_THRESHOLD,
        embedding_threshold: float = EMBEDDING_THRESHOLD,
        **engine_kwargs: Any,
    ) -> None:
        if not namespace:
            raise ConfigurationError("namespace must be a non-empty string")
        for name, value in (
            ("lexical_threshold", lexical_threshold),
            ("embedding_threshold", embedding_threshold),
        ):
            if not 0.0 < float(value) <= 1.0:
                raise ConfigurationError(f"{name} must be in (0, 1]")
        self.lexical_threshold = float(lexical_threshold)
        self.embedding_threshold = float(embedding_threshold)
        self.url = ledger_url(url)
        self.namespace = namespace
        self.store_text = store_text
        self._query_key = query_key
        self._clock = clock or (lambda: datetime.now(UTC))
        self.engine = create_ledger_engine(self.url, **engine_kwargs)
        try:
            if create:
                migrate(self.engine)
            else:
                check_version(self.engine)
        except BaseException:
            self.engine.dispose()
            raise

    def __repr__(self) -> str:
        return f"HarmLedger({display_url(self.url)!r}, namespace={self.namespace!r})"

    def close(self) -> None:
        """Release the database connections."""
        self.engine.dispose()

    def __enter__(self) -> HarmLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _now(self) -> datetime:
        return _utc(self._clock())

    def query_id(self, query: str) -> str:
        """The id under which ``query`` is recorded (``hashing.query_hash``).

        Args:
            query: The query text.

        Returns:
            The (keyed) query hash.
        """
        return query_hash(query, key=self._query_key)

    # ------------------------------------------------------------------ record
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
        prepared = self._prepare(
            report,
            query=query,
            context=context,
            origin=origin,
            success_signal=success_signal,
            agent_model=agent_model,
            judge_model=judge_model,
            model_calls=model_calls,
            trace_run_id=trace_run_id,
            trace_system=trace_system,
            trigger=trigger,
            trigger_reason=trigger_reason,
            replay_of=replay_of,
            feedback_id=feedback_id,
            guided_by=guided_by,
            extra=extra,
            run_id=run_id,
            query_embedding=query_embedding,
        )
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
        shared: dict[tuple[Any, ...], _ReportParts] | None = None,
    ) -> _Prepared:
        """The rows :meth:`record` writes for one decision (``shared``: see _report_parts)."""
        if run_id is not None and not (isinstance(run_id, str) and 0 < len(run_id) <= 36):
            raise ConfigurationError("run_id must be a non-empty string of at most 36 characters")
        memories = context_of(report, context)
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
        pk = _inserted_key(conn.execute(t.runs.insert().values(**p.run)))
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

    async def arecord(self, report: ClearanceReport, **kwargs: Any) -> RunRecord:
        """:meth:`record` in a worker thread.

        Args:
            report: The clearance report.
            **kwargs: The keyword arguments of :meth:`record`.

        Returns:
            The run as recorded.
        """
        return await asyncio.to_thread(lambda: self.record(report, **kwargs))

    # ------------------------------------------------------------------ scoped harm
    def scoped_harm(
        self,
        query: str,
        context: Sequence[Memory],
        *,
        query_embedding: Sequence[float] | None = None,
    ) -> list[ScopedHarm]:
        """The context's memories verified harmful for ``query`` or a question like it.

        Reads the state kept up to date on write (``scope_state``): one indexed read of the
        active rows of the K memories (and this question's own rows), O(K) in the history's
        length. A memory counts when a verified clearance removed the same text for the same
        question (``same_query``) or for a question whose similarity reaches the threshold
        (``similar_query``, ``scope``) and neither a restore, nor a later finding that the
        question needs it or was answered right with it, nor an acquittal came after; this
        question's own later verdict wins over a similar question's harm. An unrelated
        question keeps the memory.

        Args:
            query: The question.
            context: The retrieved memories, in retrieval order.
            query_embedding: The question's embedding (compared with those recorded with
                ``record(query_embedding=...)``; otherwise the lexical signatures are).

        Returns:
            One entry per memory, in retrieval order (the same question first, else the most
            similar recorded question).

        Example:
            >>> from meclear_integrations.ledger import HarmLedger
            >>> from meclear_integrations.core import Memory
            >>> with HarmLedger("sqlite://") as ledger:
            ...     ledger.scoped_harm("Where is John?", [Memory(id="m1", content="x")])
            []
        """
        return [h for h, _ in self._scoped(query, context, query_embedding)]

    async def ascoped_harm(
        self,
        query: str,
        context: Sequence[Memory],
        *,
        query_embedding: Sequence[float] | None = None,
    ) -> list[ScopedHarm]:
        """:meth:`scoped_harm` in a worker thread.

        Args:
            query: The question.
            context: The retrieved memories, in retrieval order.
            query_embedding: The question's embedding, if any.

        Returns:
            The scoped harm.
        """
        return await asyncio.to_thread(
            lambda: self.scoped_harm(query, list(context), query_embedding=query_embedding)
        )

    def _scoped(
        self,
        query: str,
        context: Sequence[Memory],
        embedding: Sequence[float] | None,
    ) -> list[tuple[ScopedHarm, bool]]:
        """(harm, its own contribution tested) per context memory in scope."""
        hashes = {m.id: content_hash(m.content) for m in context}
        if not hashes:
            return []
        query_id = self.query_id(query)
        with single_read(self.engine) as conn:
            # by id, and the same text under a new id (``content``): one bounded read
            rows = load_active_any_id(conn, self.namespace, hashes, query_id)
        if not rows:
            return []
        own_verdict = {r.memory_id for r in rows if r.query_id == query_id and not r.active}
        signature = lexical_signature(query, key=self._query_key)
        names = name_signature(query, key=self._query_key)
        vector = [float(x) for x in embedding] if embedding is not None else None
        best: dict[str, tuple[ScopedHarm, bool]] = {}
        for row in rows:
            if row.memory_id in own_verdict:
                continue  # this question's own later verdict (needed, helped) wins
            if row.query_id == query_id:
                similarity, scope = 1.0, "same_query"
            else:
                similarity, alike = question_similarity(
                    signature,
                    vector,
                    row.signature,
                    row.embedding,
                    names=names,
                    other_names=row.names,
                    lexical_threshold=self.lexical_threshold,
                    embedding_threshold=self.embedding_threshold,
                )
                if not alike:
                    continue
                scope = "similar_query"
            harm = ScopedHarm(
                memory_id=row.memory_id,
                content_hash=row.content_hash,
                run_id=row.cleared_run_id or "",
                query_id=row.query_id,
                scope=scope,  # type: ignore[arg-type]
                similarity=similarity,
                carrier=row.carrier,
                settled=row.settled,
            )
            current = best.get(row.memory_id)
            if current is None or (harm.similarity, harm.settled) > (
                current[0].similarity,
                current[0].settled,
            ):
                best[row.memory_id] = (harm, row.tested)
        return [best[m.id] for m in context if m.id in best]

    # ------------------------------------------------------------------ prior candidates
    def prior_candidate(
        self,
        context: Sequence[Memory],
        *,
        query: str | None = None,
        query_embedding: Sequence[float] | None = None,
    ) -> PriorCandidate:
        """The engine's prior candidate for ``context`` (``core.prior``).

        With ``query`` (what every integration passes): the memories of :meth:`scoped_harm`,
        marked ``scoped`` so the engine verifies them before its early exit (a fooled
        reference-free judge accepting the full context cannot hide a harm verified for this
        question); ``unproven``: those whose own contribution no verified run of that
        question tested yet, which the engine puts back once (a carrier is not: alone it
        gives the harmful answer, which no put-back beside the evidence contradicts);
        ``settled``: those whose harm for the question was verified against a reference or
        a person's correction, unless that person was an end user alone (``settlement``).

        Without ``query`` (unscoped, for callers that do not know the question): the memories
        that a verified clearance of *any* question removed before (same id and same text)
        and that were not restored since; a restored memory is offered again only after new
        verified evidence.

        Args:
            context: The retrieved memories, in retrieval order.
            query: The question (scoped lookup, O(K)).
            query_embedding: The question's embedding, if any (scoped lookup).

        Returns:
            The prior candidate (empty when the ledger knows no harm in ``context``).
        """
        if query is not None:
            scoped = self._scoped(query, context, query_embedding)
            vouched = self._vouched([h for h, _ in scoped if h.settled])
            return PriorCandidate(
                ids=tuple(h.memory_id for h, _ in scoped),
                # a carrier's harm is its own answer, not a removal a put-back could undo
                unproven=tuple(h.memory_id for h, tested in scoped if not tested and not h.carrier),
                scoped=bool(scoped),
                settled=tuple(h.memory_id for h, _ in scoped if h.memory_id in vouched),
                carriers=tuple(h.memory_id for h, _ in scoped if h.carrier),
            )
        hashes = {m.id: content_hash(m.content) for m in context}
        if not hashes:
            return PriorCandidate()
        with read_transaction(self.engine) as conn:
            restored: dict[str, datetime] = {}
            for chunk in _chunks(list(hashes)):
                restored.update(self._restores(conn, chunk))
            facts = load_harm_facts(conn, self.namespace, list(hashes), restored)
        known = {i: facts[(i, h)] for i, h in hashes.items() if (i, h) in facts}
        return PriorCandidate(
            ids=tuple(known), unproven=tuple(i for i, f in known.items() if not f.tested)
        )

    def _vouched(self, harms: Sequence[ScopedHarm]) -> set[str]:
        """Settled harms not resting on an end user's correction alone (``settlement``)."""
        if not harms:
            return set()
        keys_of = [(h.memory_id, h.content_hash, h.query_id) for h in harms]
        with single_read(self.engine) as conn:
            found = settlements(conn, self.namespace, keys_of)
        alone = {k for k, s in found.items() if s.authority == "end_user"}
        return {h.memory_id for h, k in zip(harms, keys_of, strict=True) if k not in alone}

    async def aprior_candidate(
        self,
        context: Sequence[Memory],
        *,
        query: str | None = None,
        query_embedding: Sequence[float] | None = None,
    ) -> PriorCandidate:
        """:meth:`prior_candidate` in a worker thread.

        Args:
            context: The retrieved memories, in retrieval order.
            query: The question (scoped lookup).
            query_embedding: The question's embedding, if any.

        Returns:
            The prior candidate.
        """
        return await asyncio.to_thread(
            lambda: self.prior_candidate(
                list(context), query=query, query_embedding=query_embedding
            )
        )

    def prior_harmful(self, context: Sequence[Memory], *, query: str | None = None) -> list[str]:
        """Ids of :meth:`prior_candidate`, in retrieval order.

        These are the context's memories verified harmful before (for ``query`` or a
        question like it, when given) and offered to the engine.

        Args:
            context: The retrieved memories, in retrieval order.
            query: The question (scoped lookup); None: unscoped.

        Returns:
            The memory ids.
        """
        return list(self.prior_candidate(context, query=query).ids)

    def _verified_harmful(self, hashes: dict[str, str]) -> list[str]:
        """Ids of ``{memory id: content hash}`` that a verified clearance removed.

        Only clearances of the same text after the memory's last restore count.
        """
        if not hashes:
            return []
        ids = list(hashes)
        evidence: dict[str, datetime] = {}
        restored: dict[str, datetime] = {}
        r, m = t.runs, t.run_memories
        with read_transaction(self.engine) as conn:
            for chunk in _chunks(ids):
                rows = conn.execute(
                    select(m.c.memory_id, m.c.content_hash, func.max(r.c.created_at))
                    .join(r, m.c.run_pk == r.c.id)
                    .where(
                        r.c.namespace == self.namespace,
                        m.c.namespace == self.namespace,
                        m.c.memory_id.in_(chunk),
                        m.c.cleared.is_(True),
                        r.c.status == "complete",
                        r.c.recovered.is_(True),
                    )
                    .group_by(m.c.memory_id, m.c.content_hash)
                )
                for memory_id, digest, at in rows:
                    if hashes.get(memory_id) == digest:
                        evidence[memory_id] = _utc(at)
                restored.update(self._restores(conn, chunk))
        return [
            i for i in ids if i in evidence and (i not in restored or evidence[i] > restored[i])
        ]

    async def aprior_harmful(
        self, context: Sequence[Memory], *, query: str | None = None
    ) -> list[str]:
        """:meth:`prior_harmful` in a worker thread.

        Args:
            context: The retrieved memories, in retrieval order.
            query: The question (scoped lookup); None: unscoped.

        Returns:
            The memory ids.
        """
        return await asyncio.to_thread(lambda: self.prior_harmful(list(context), query=query))

    def _restores(self, conn: Connection, ids: Sequence[str]) -> dict[str, datetime]:
        e = t.memory_events
        rows = conn.execute(
            select(e.c.memory_id, func.max(e.c.created_at))
            .where(
                e.c.namespace == self.namespace,
                e.c.event == "restored",
                e.c.memory_id.in_(ids),
            )
            .group_by(e.c.memory_id)
        )
        return {memory_id: _utc(at) for memory_id, at in rows}

    # ------------------------------------------------------------------ feedback
    def feedback(
        self,
        run_or_query_id: str,
        *,
        correct: bool,
        correction: str | None = None,
        memory_ids: Sequence[str] = (),
        source: str = "api",
        source_id: str | None = None,
        comment: str | None = None,
        trusted: bool = False,
        authority: FeedbackAuthority | None = None,
    ) -> FeedbackRecord:
        """Record a verdict on the answer of a recorded query.

        Feedback is recorded, never acted on alone: a verdict that would restore or
        exonerate a memory (``correct=True`` naming memories) is a claim any user, or a
        hostile one, can make. It restores them only when ``trusted=True`` (a reviewer you
        trust) or once a verification replay (``replay.replay_feedback`` with the
        ``correction`` as reference) shows the answer is right *with* them (which exonerates
        them for that question only); until then the memories keep their verified harm,
        and the ledger shortcut and review see no change.

        Args:
            run_or_query_id: A ledger run id, a tracing run id (LangSmith / LlamaIndex) or a
                query id (its latest run).
            correct: Whether the answer was right.
            correction: The right answer; with ``correct=False`` it makes the feedback
                replayable (``replay``: clearance rerun with the correction as its
                reference, verified and recorded).
            memory_ids: With ``correct=False`` the memories the person suspects (tried first
                by the replay, never cleared without verification); with ``correct=True``
                memories the person confirms as good: restored (when a verified clearance
                had removed them) only when ``trusted`` or after a verification replay.
            source: Where the verdict came from (``api``, ``cli``, ``langsmith``...).
            source_id: The verdict's id at its source.
            comment: Free text (for a reviewer or an operator: why; recorded with the
                restores it makes).
            trusted: Shorthand for ``authority="reviewer"``.
            authority: Who gives it: ``end_user`` (default unless ``trusted``): recorded and
                replayable, but its replay is history only (no harm shared with, or settled
                for, other users: the loop's own verified runs decide, e.g. the
                ``feedback`` trigger auditing the question's next ask); ``reviewer`` or
                ``operator``: their replay is verified against their correction and shared,
                their positive feedback restores (at once without a correction; with one,
                once its replay verifies, for that question). Who (``source_id``), when and why
                (``comment``) are kept with the feedback and its restores.

        Returns:
            The feedback as recorded.

        Raises:
            ConfigurationTypeError: ``correct`` is not a bool.
            ConfigurationError: ``memory_ids`` names memories the query did not retrieve.
            LedgerLookupError: No run matches ``run_or_query_id``.
        """
        if not isinstance(correct, bool):
            raise ConfigurationTypeError("correct must be True or False")
        if not isinstance(trusted, bool):
            raise ConfigurationTypeError("trusted must be True or False")
        if authority is None:
            authority = "reviewer" if trusted else "end_user"
        if authority not in FEEDBACK_AUTHORITIES:
            raise ConfigurationError(
                f"authority must be one of {', '.join(FEEDBACK_AUTHORITIES)}, got {authority!r}"
            )
        run = self.find_run(run_or_query_id)
        named = list(dict.fromkeys(str(i) for i in memory_ids))
        unknown = sorted(set(named) - set(run.memory_ids))
        if unknown:
            raise ConfigurationError(
                f"memory ids {unknown} were not in the context of run {run.run_id}; "
                "feedback can only name memories the query retrieved"
            )
        row: dict[str, Any] = {
            "feedback_id": str(uuid.uuid4()),
            "namespace": self.namespace,
            "created_at": self._now(),
            "run_id": run.run_id,
            "query_id": run.query_id,
            "correct": correct,
            "correction": safe_text(correction, 100_000),
            "source": safe_text(source, 40) or "api",
            "source_id": safe_text(source_id, 100),
            "comment": safe_text(comment, 10_000),
            "authority": authority,
        }
        with write_transaction(self.engine) as conn:
            pk = _inserted_key(conn.execute(t.feedback.insert().values(**row)))
            if named:
                conn.execute(
                    t.feedback_memories.insert(),
                    [
                        {"feedback_pk": pk, "namespace": self.namespace, "memory_id": mid}
                        for mid in named
                    ],
                )
        record = FeedbackRecord(**row, memory_ids=named)
        if correct and named and authority != "end_user" and correction is None:
            recorded = {m.memory_id: m.content_hash for m in run.memories}
            confirmed = self._verified_harmful({i: recorded[i] for i in named})
            for memory_id in sorted(confirmed):
                self.restore(
                    memory_id,
                    reason=safe_text(comment, 2000)
                    or f"confirmed good by {authority} positive feedback",
                    actor=f"{authority}:{safe_text(source_id or source, 60)}",
                    feedback_id=record.feedback_id,
                    run_id=run.run_id,
                )
        return record

    async def afeedback(self, run_or_query_id: str, **kwargs: Any) -> FeedbackRecord:
        """:meth:`feedback` in a worker thread.

        Args:
            run_or_query_id: A ledger run id, a tracing run id or a query id.
            **kwargs: The keyword arguments of :meth:`feedback`.

        Returns:
            The feedback as recorded.
        """
        return await asyncio.to_thread(lambda: self.feedback(run_or_query_id, **kwargs))

    def restore(
        self,
        memory_id: str,
        *,
        reason: str | None = None,
        actor: str | None = None,
        feedback_id: str | None = None,
        run_id: str | None = None,
    ) -> MemoryEvent:
        """Mark ``memory_id`` as wrongly suppressed.

        Ledger shortcuts never clear it and review never proposes it, until new verified
        evidence (a clearance recorded after this restore that removed it).

        Args:
            memory_id: The memory's id in your store.
            reason: Why it is restored.
            actor: Who restored it.
            feedback_id: The feedback that asked for it.
            run_id: The run whose clearance is undone.

        Returns:
            The restore event as recorded.
        """
        row: dict[str, Any] = {
            "namespace": self.namespace,
            "created_at": self._now(),
            "memory_id": str(memory_id),
            "event": "restored",
            "reason": safe_text(reason, 2000),
            "actor": safe_text(actor),
            "feedback_id": feedback_id,
            "run_id": run_id,
        }
        with write_transaction(self.engine) as conn:
            conn.execute(t.memory_events.insert().values(**row))
            restore_scopes(conn, self.namespace, row["memory_id"], row["created_at"])
        return MemoryEvent(**row)

    def exonerate(self, memory_id: str, *, content_hash: str, query: str, run_id: str) -> None:
        """Record that a verified run answered ``query`` right *with* the memory.

        Scoped: the memory's harm is lifted for this question only (a later verified
        clearance of it there counts again), and review counts the question for it. Called
        by a verified replay of positive feedback (``replay``).

        Args:
            memory_id: The memory.
            content_hash: The text the verification ran on.
            query: The question.
            run_id: The verified run.
        """
        with write_transaction(self.engine) as conn:
            apply_run(
                conn,
                namespace=self.namespace,
                query_id=self.query_id(query),
                run_id=run_id,
                at=self._now(),
                signature=lexical_signature(query, key=self._query_key),
                names=name_signature(query, key=self._query_key),
                embedding=None,
                observations=[
                    Observation(memory_id=memory_id, content_hash=content_hash, helpful=True)
                ],
            )

    def pending_replays(self) -> list[FeedbackRecord]:
        """Feedback with a correction that no replay has answered yet.

        Negative feedback (a clearance to verify against the correction), and positive
        feedback naming memories (their exoneration to verify: the answer right with them).
        """
        f, r, fm = t.feedback, t.runs, t.feedback_memories
        answered = exists().where(r.c.feedback_id == f.c.feedback_id)
        names = exists().where(fm.c.feedback_pk == f.c.id)
        query = (
            select(f)
            .where(
                f.c.namespace == self.namespace,
                or_(f.c.correct.is_(False), names),
                f.c.correction.is_not(None),
                ~answered,
            )
            .order_by(f.c.id)
        )
        return self._feedback_records(query)

    def get_feedback(self, feedback_id: str) -> FeedbackRecord:
        """The feedback with id ``feedback_id``.

        Args:
            feedback_id: The feedback's id.

        Returns:
            The feedback record.

        Raises:
            LedgerLookupError: No feedback has this id in the namespace.
        """
        f = t.feedback
        found = self._feedback_records(
            select(f).where(f.c.namespace == self.namespace, f.c.feedback_id == feedback_id)
        )
        if not found:
            raise LedgerLookupError(
                f"no feedback with id {feedback_id!r} in ledger namespace {self.namespace!r}"
            )
        return found[0]

    def latest_feedback(self, query_id: str) -> FeedbackRecord | None:
        """The most recent feedback on any run of ``query_id``.

        Args:
            query_id: The query's id (:meth:`query_id`).

        Returns:
            The feedback, or None when the query has none.
        """
        f = t.feedback
        query = (
            select(f)
            .where(f.c.namespace == self.namespace, f.c.query_id == query_id)
            .order_by(f.c.id.desc())
            .limit(1)
        )
        found = self._feedback_records(query)
        return found[0] if found else None

    def recent_feedback(self, limit: int = 50) -> list[FeedbackRecord]:
        """The latest ``limit`` feedback records, newest first.

        Args:
            limit: The most records returned.

        Returns:
            The feedback records.
        """
        f = t.feedback
        query = (
            select(f).where(f.c.namespace == self.namespace).order_by(f.c.id.desc()).limit(limit)
        )
        return self._feedback_records(query)

    def _feedback_records(self, query: Any) -> list[FeedbackRecord]:
        fm = t.feedback_memories
        with read_transaction(self.engine) as conn:
            rows = conn.execute(query).mappings().all()
            named: dict[int, list[str]] = {}
            pks = [row["id"] for row in rows]
            for start in range(0, len(pks), _CHUNK):
                for pk, mid in conn.execute(
                    select(fm.c.feedback_pk, fm.c.memory_id)
                    .where(fm.c.feedback_pk.in_(pks[start : start + _CHUNK]))
                    .order_by(fm.c.id)
                ):
                    named.setdefault(pk, []).append(mid)
        return [_feedback_record(row, named.get(row["id"], [])) for row in rows]

    # ------------------------------------------------------------------ lookups
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
        fields["created_at"] = _utc(fields["created_at"])
        fields["extra"] = fields.get("extra") or {}
        fields["cost"] = fields.get("cost") or {}
        return RunRecord(
            **fields,
            memories=[_memory_record(x) for x in memories],
            candidates=[
                CandidateRecord(**{k: v for k, v in x.items() if k not in ("id", "run_pk")})
                for x in cands
            ],
        )

    # ------------------------------------------------------------------ history
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
            conditions += [f.c.run_id.in_(chunk) for chunk in _chunks(run_ids)]
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
                created_at=_utc(row["created_at"]),
                query_id=row["query_id"],
                origin=row["origin"],
                mode=row["mode"],
                status=row["status"],
                recovered=row["recovered"],
                success_signal=row["success_signal"],
                memory=_memory_record(row),
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
                    created_at=_utc(ev["created_at"]),
                )
                for ev in events
            ],
        )

    # ------------------------------------------------------------------ review
    def evidence(self) -> list[QueryEvidence]:
        """Per memory, content hash and distinct question: the verified verdict (``review``).

        Read from the state kept on write (``scope_state``), one row per memory and question.
        A question counts against a memory only when a run that did not get it from the
        ledger verified its harm there (a full attribution, or a person's feedback replayed
        against the correction: *rooted*), after the memory's last restore, and no later
        verified run found it helpful or needed for that question; a ledger-guided run that
        carried it along (or carried it to a question it was never proven on) earns no
        evidence. A question whose latest verdict is that it needs the memory is recorded
        as such (``needed``), one where it helped as ``beneficial``.
        """
        s = t.memory_scopes
        with read_transaction(self.engine) as conn:
            rows = conn.execute(select(s).where(s.c.namespace == self.namespace)).mappings().all()
        return [e for e in (_scope_evidence(row) for row in rows) if e is not None]

    def review(
        self,
        *,
        min_queries: int = 2,
        min_consistency: float = 0.8,
        confidence: float = 0.95,
        limit: int | None = None,
        include_retired: bool = False,
    ) -> list[ReviewProposal]:
        """Memories with consistently negative contributions, ranked (``review``).

        A memory qualifies across at least ``min_queries`` distinct queries with verified
        recoveries. A memory an applied review retired from the store (an open tombstone,
        ``tombstones``) is not proposed again unless ``include_retired``.

        Args:
            min_queries: The fewest distinct queries with verified evidence against a memory.
            min_consistency: The lowest harmful / (harmful + beneficial) share of its queries.
            confidence: The confidence of the Wilson lower bound that ranks the proposals.
            limit: The most proposals returned (None: all).
            include_retired: Also the memories already retired (a decision on one of them
                is recorded; applying it again changes nothing).

        Returns:
            The proposals, strongest evidence first; the ledger never deletes anything.

        Raises:
            ConfigurationError: ``min_queries`` is less than 1 or ``confidence`` is outside
                (0, 1).
        """
        proposals = rank_proposals(
            self.evidence(),
            min_queries=min_queries,
            min_consistency=min_consistency,
            confidence=confidence,
        )
        proposals, _ = set_aside_framed(proposals, self._suspects_kept(proposals))
        if not include_retired:
            proposals = self._not_retired(proposals)
        return proposals if limit is None else proposals[:limit]

    def _not_retired(self, proposals: list[ReviewProposal]) -> list[ReviewProposal]:
        """Drop what an applied review already took out of the store (``tombstones``)."""
        if not proposals:
            return proposals
        retired = retired_memory_ids(self)
        return [p for p in proposals if p.memory_id not in retired]

    def single_query_review(
        self, *, min_queries: int = 2, min_consistency: float = 0.8, confidence: float = 0.95
    ) -> list[ReviewProposal]:
        """Memories verified harmful on fewer than ``min_queries`` questions (their own tier).

        What :meth:`review` does not propose yet, with the same evidence rules: the first
        verified clearance of a memory appears here at once (``tier="single_query"``).

        Args:
            min_queries: As :meth:`review` (these are below it).
            min_consistency: As :meth:`review`.
            confidence: As :meth:`review`.

        Returns:
            The entries, strongest evidence first.
        """
        below = single_query_clearances(
            self.evidence(),
            min_queries=min_queries,
            min_consistency=min_consistency,
            confidence=confidence,
        )
        kept, _ = set_aside_framed(below, self._suspects_kept(below))
        return [p.model_copy(update={"tier": "single_query"}) for p in self._not_retired(kept)]

    def review_interactions(
        self, *, min_queries: int = 2, min_consistency: float = 0.8, confidence: float = 0.95
    ) -> list[FramedCandidate]:
        """Memories review set aside: every verified removal left a suspect in the context.

        Args:
            min_queries: As :meth:`review`.
            min_consistency: As :meth:`review`.
            confidence: As :meth:`review`.

        Returns:
            The interactions (memory, the suspects kept with it, the runs), for a person.
        """
        proposals = rank_proposals(
            self.evidence(),
            min_queries=min_queries,
            min_consistency=min_consistency,
            confidence=confidence,
        )
        return set_aside_framed(proposals, self._suspects_kept(proposals))[1]

    def _suspects_kept(self, proposals: Sequence[ReviewProposal]) -> dict[str, list[str]]:
        """Run id -> the suspects its clearance kept, for the runs behind ``proposals``."""
        run_ids = sorted({r for p in proposals for r in p.run_ids})
        if not run_ids:
            return {}
        with read_transaction(self.engine) as conn:
            rows = conn.execute(
                select(t.runs.c.run_id, t.runs.c.extra).where(t.runs.c.run_id.in_(run_ids))
            ).all()
        return {
            row.run_id: list((row.extra or {}).get("suspects_kept") or [])
            for row in rows
            if isinstance(row.extra, dict)
        }

    def carrier_review(self, *, min_queries: int = 1, runs: int = 1000) -> list[CarrierProposal]:
        """Memories that carried a verified harm by themselves, with their evidence.

        The carriers named by the latest ``runs`` verified runs (``review.carrier_proposals``:
        redundant copies that minimal clearance kept), most queries first.

        Args:
            min_queries: The fewest distinct queries a proposal needs.
            runs: The most recent runs read.

        Returns:
            The proposals; the ledger never deletes anything.
        """
        return carrier_proposals(self.runs(limit=runs), min_queries=min_queries)

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
            settlement = settlement_counts(conn, self.namespace)
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


def _memory_record(row: Any) -> MemoryRecord:
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


def _feedback_record(row: Any, memory_ids: list[str]) -> FeedbackRecord:
    fields = {k: v for k, v in row.items() if k != "id"}
    fields["created_at"] = _utc(fields["created_at"])
    return FeedbackRecord(**fields, memory_ids=memory_ids)


def _carrier_ids(report: ClearanceReport) -> list[str]:
    """Ids the report marks as carriers of a redundant fault (issue 26), if it has the field."""
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


def _inserted_key(result: Any) -> int:
    key = result.inserted_primary_key
    if key is None:  # pragma: no cover - every supported backend returns it
        raise RuntimeError("the database did not return the inserted row's key")
    return int(key[0])


def _scope_evidence(row: Any) -> QueryEvidence | None:
    """One state row as review evidence (:meth:`HarmLedger.evidence`); None when neutral."""
    cleared = _maybe_utc(row["cleared_at"])
    restored = _maybe_utc(row["restored_at"])
    rooted = _maybe_utc(row["rooted_at"])
    needed = _maybe_utc(row["needed_at"])
    helpful = _maybe_utc(row["helpful_at"])
    latest_help = max((x for x in (needed, helpful) if x is not None), default=None)
    # A carrier-only activation (``scope_state``) adds no evidence: the question counts only
    # when its rooted clearance still stands on its own (later than any help found since).
    carried = bool(row["carrier"])
    harmful_at = (
        cleared
        if row["active"]
        and rooted is not None
        and (restored is None or rooted > restored)
        and not (carried and latest_help is not None and rooted <= latest_help)
        else None
    )
    if latest_help is not None and cleared is not None and cleared > latest_help:
        latest_help = None  # a later verified clearance supersedes the help
    if harmful_at is None and latest_help is None:
        return None
    return QueryEvidence(
        memory_id=row["memory_id"],
        content_hash=row["content_hash"],
        query_id=row["query_id"],
        harmful_at=harmful_at,
        beneficial_at=latest_help,
        needed=latest_help is not None and needed is not None and needed >= latest_help,
        harmful_shapley_sum=float(row["shapley_sum"] or 0.0) if harmful_at else 0.0,
        harmful_shapley_count=int(row["shapley_count"] or 0) if harmful_at else 0,
        run_ids=[row["rooted_run_id"]] if harmful_at and row["rooted_run_id"] else [],
    )


def _maybe_utc(value: datetime | None) -> datetime | None:
    return None if value is None else _utc(value)
