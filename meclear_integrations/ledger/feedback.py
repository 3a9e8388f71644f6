"""Feedback, restores and exonerations: what people say about recorded answers.

Feedback is recorded, never acted on alone (:meth:`FeedbackLog.feedback`); a restore
(:meth:`FeedbackLog.restore`) and an exoneration (:meth:`FeedbackLog.exonerate`) update the
per memory and question state in the same transaction; ``replay`` answers the feedback
that carries a correction (:meth:`FeedbackLog.pending_replays`).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import exists, or_, select

from ..core.concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..core.errors import ConfigurationError, ConfigurationTypeError
from . import schema as t
from .base import LedgerLookupError, inserted_key
from .database import write_transaction
from .harm import HarmLookups
from .lookups import Lookups
from .records import FEEDBACK_AUTHORITIES, FeedbackAuthority, FeedbackRecord, MemoryEvent
from .rows import safe_text
from .scope import lexical_signature, name_signature
from .scope_state import Observation, apply_run, restore_scopes

__all__ = ["FeedbackLog"]


class FeedbackLog(Lookups, HarmLookups):
    """Records feedback and its consequences, and reads it back."""

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
        # the keyword arguments as given: nothing is assigned before this line
        kwargs = {k: v for k, v in locals().items() if k not in ("self", "run_or_query_id")}
        return run_steps(self._feedback_steps(run_or_query_id, **kwargs))

    async def afeedback(self, run_or_query_id: str, **kwargs: Any) -> FeedbackRecord:
        """:meth:`feedback`'s steps, database work in worker threads (arguments, result, errors)."""
        return await arun_steps(self._feedback_steps(run_or_query_id, **kwargs))

    def _feedback_steps(
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
    ) -> Steps[FeedbackRecord]:
        """:meth:`feedback`'s steps: checks, the run's lookup, the insert, trusted restores."""
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
        run = yield Call(functools.partial(self.find_run, run_or_query_id))
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
        yield Call(functools.partial(self._insert_feedback, row, named))
        record = FeedbackRecord(**row, memory_ids=named)
        if correct and named and authority != "end_user" and correction is None:
            recorded = {m.memory_id: m.content_hash for m in run.memories}
            confirmed = yield Call(
                functools.partial(self._verified_harmful, {i: recorded[i] for i in named})
            )
            for memory_id in sorted(confirmed):
                restore = functools.partial(
                    self.restore,
                    memory_id,
                    reason=safe_text(comment, 2000)
                    or f"confirmed good by {authority} positive feedback",
                    actor=f"{authority}:{safe_text(source_id or source, 60)}",
                    feedback_id=record.feedback_id,
                    run_id=run.run_id,
                )
                yield Call(restore)
        return record

    def _insert_feedback(self, row: dict[str, Any], named: list[str]) -> None:
        """Insert one feedback row and the memories it names (one transaction)."""
        with write_transaction(self.engine) as conn:
            pk = inserted_key(conn.execute(t.feedback.insert().values(**row)))
            if named:
                conn.execute(
                    t.feedback_memories.insert(),
                    [
                        {"feedback_pk": pk, "namespace": self.namespace, "memory_id": mid}
                        for mid in named
                    ],
                )

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
