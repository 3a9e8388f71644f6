"""What the ledger knows to be harmful for a question: scoped harm and prior candidates.

:meth:`HarmLookups.scoped_harm` reads the state kept up to date on write (``scope_state``,
``content``) in O(K); :meth:`HarmLookups.prior_candidate` offers it to the engine as a
prior candidate (``core.prior``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from ..core.concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..core.memory import Memory
from ..core.prior import PriorCandidate
from ..runtime.hashing import content_hash
from . import schema as t
from .base import LedgerBase, chunks, utc
from .content import load_active_any_id
from .database import read_transaction, single_read
from .proof import HarmFacts, Key, load_harm_facts
from .scope import ScopedHarm, lexical_signature, name_signature, question_similarity
from .scope_state import ScopeRow
from .settlement import settlements

__all__ = ["HarmLookups"]


class HarmLookups(LedgerBase):
    """Scoped harm and prior candidates for a retrieved context."""

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
        return run_steps(self._harm_steps(query, context, query_embedding))

    async def ascoped_harm(
        self,
        query: str,
        context: Sequence[Memory],
        *,
        query_embedding: Sequence[float] | None = None,
    ) -> list[ScopedHarm]:
        """:meth:`scoped_harm`'s steps, its read in a worker thread (arguments, result, errors)."""
        return await arun_steps(self._harm_steps(query, context, query_embedding))

    def _harm_steps(
        self, query: str, context: Sequence[Memory], embedding: Sequence[float] | None
    ) -> Steps[list[ScopedHarm]]:
        """:meth:`scoped_harm`'s steps (``context`` read once)."""
        scoped = yield from self._scoped(query, list(context), embedding)
        return [h for h, _ in scoped]

    def _scoped(
        self,
        query: str,
        context: Sequence[Memory],
        embedding: Sequence[float] | None,
    ) -> Steps[list[tuple[ScopedHarm, bool]]]:
        """(harm, its own contribution tested) per context memory in scope: one read step."""
        hashes = {m.id: content_hash(m.content) for m in context}
        if not hashes:
            return []
        query_id = self.query_id(query)
        rows = yield Call(functools.partial(self._active_rows, hashes, query_id))
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

    def _active_rows(self, hashes: dict[str, str], query_id: str) -> list[ScopeRow]:
        """The active state rows of ``hashes``' memories, by id or by text (``content``)."""
        with single_read(self.engine) as conn:
            # by id, and the same text under a new id (``content``): one bounded read
            return load_active_any_id(conn, self.namespace, hashes, query_id)

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
        return run_steps(self._prior_steps(context, query, query_embedding))

    def _prior_steps(
        self, context: Sequence[Memory], query: str | None, embedding: Sequence[float] | None
    ) -> Steps[PriorCandidate]:
        """:meth:`prior_candidate`'s steps: its reads (``context`` read once)."""
        context = list(context)
        if query is not None:
            scoped = yield from self._scoped(query, context, embedding)
            settled = [h for h, _ in scoped if h.settled]
            vouched = (yield Call(functools.partial(self._vouched, settled))) if settled else set()
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
        facts = yield Call(functools.partial(self._unscoped_facts, hashes))
        known = {i: facts[(i, h)] for i, h in hashes.items() if (i, h) in facts}
        return PriorCandidate(
            ids=tuple(known), unproven=tuple(i for i, f in known.items() if not f.tested)
        )

    def _unscoped_facts(self, hashes: dict[str, str]) -> dict[Key, HarmFacts]:
        """The harm facts of ``hashes``' memories since their last restores (one read)."""
        with read_transaction(self.engine) as conn:
            restored: dict[str, datetime] = {}
            for chunk in chunks(list(hashes)):
                restored.update(self._restores(conn, chunk))
            return load_harm_facts(conn, self.namespace, list(hashes), restored)

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
        """:meth:`prior_candidate`'s steps, reads in worker threads (arguments, result, errors)."""
        return await arun_steps(self._prior_steps(context, query, query_embedding))

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

    async def aprior_harmful(
        self, context: Sequence[Memory], *, query: str | None = None
    ) -> list[str]:
        """:meth:`prior_harmful` with the reads in worker threads (arguments, result, errors)."""
        return list((await self.aprior_candidate(context, query=query)).ids)

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
            for chunk in chunks(ids):
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
                        evidence[memory_id] = utc(at)
                restored.update(self._restores(conn, chunk))
        return [
            i for i in ids if i in evidence and (i not in restored or evidence[i] > restored[i])
        ]

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
        return {memory_id: utc(at) for memory_id, at in rows}
