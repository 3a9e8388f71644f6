"""The ledger's review: proposals for a person from the verified evidence it keeps.

The rules (what counts as evidence, ranking, the Wilson bound, framed candidates) are in
``review``; this module reads the evidence from the per memory and question state
(``scope_state``) and the runs, and leaves out what an applied review already retired
(``tombstones``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select

from . import schema as t
from .base import maybe_utc
from .database import read_transaction
from .lookups import Lookups
from .review import (
    CarrierProposal,
    FramedCandidate,
    QueryEvidence,
    ReviewProposal,
    carrier_proposals,
    rank_proposals,
    set_aside_framed,
    single_query_clearances,
)
from .tombstones import retired_memory_ids

__all__ = ["Reviewing"]


class Reviewing(Lookups):
    """Review proposals, the single-query tier, interactions and carriers."""

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

    def _not_retired(self, proposals: list[ReviewProposal]) -> list[ReviewProposal]:
        """Drop what an applied review already took out of the store (``tombstones``)."""
        if not proposals:
            return proposals
        retired = retired_memory_ids(self)
        return [p for p in proposals if p.memory_id not in retired]

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


def _scope_evidence(row: Any) -> QueryEvidence | None:
    """One state row as review evidence (:meth:`Reviewing.evidence`); None when neutral."""
    cleared = maybe_utc(row["cleared_at"])
    restored = maybe_utc(row["restored_at"])
    rooted = maybe_utc(row["rooted_at"])
    needed = maybe_utc(row["needed_at"])
    helpful = maybe_utc(row["helpful_at"])
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
