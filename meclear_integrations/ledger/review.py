"""Review: memories with consistently negative contributions, ranked, as proposals.

Evidence comes only from verified outcomes (runs with status ``complete`` that recovered)
and, against a memory, only from after its last restore. Per memory (id and content hash)
and distinct question, the latest verified verdict counts once (``HarmLedger.evidence``,
read from the per memory and question state, ``scope_state``):

- *harmful*: the memory's harm was proven for *that* question by a run that did not take it
  from the ledger (a full attribution, or a person's feedback replayed against the
  correction). A ledger-guided run only repeats a harm proven elsewhere: it never makes a
  question count, so one question's misreading followed by guided runs of other questions
  is one harmful question, not many;
- *beneficial*: a full attribution kept it with a contribution above the run's harm
  tolerance (it helped that question); *needed* when the contribution's interval is clear
  of zero (that question needs it);
- anything else (present but neutral, or the full context passed) is neither.

A memory is proposed when it was harmful for at least ``min_queries`` distinct questions,
no question currently needs it (:func:`blocked`: a memory some question needs is never
proposed, however often it was harmful elsewhere) and its consistency h / (h + b)
(harmful among non-neutral questions) is at least ``min_consistency``. Proposals are
ranked by the Wilson lower confidence bound of that consistency (more evidence ranks
higher at the same rate), then by h, then by the mean Shapley value of the harmful
observations (more negative first).

Below ``min_queries`` a memory is not proposed but still shown, as its own tier
(:func:`single_query_clearances`, ``tier="single_query"``): the first verified clearance of a
memory appears in review at once, for a person to look at, while a proposal to delete it
from the store waits for a second question (one question's harm is already withheld for
that question and ones like it by the ledger; deleting acts on every question).

A proposal is only a proposal: the package never deletes a memory from a store.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence
from datetime import datetime
from statistics import NormalDist
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core.errors import ConfigurationError

__all__ = [
    "CarrierProposal",
    "FramedCandidate",
    "QueryEvidence",
    "ReviewProposal",
    "blocked",
    "carrier_payload",
    "carrier_proposals",
    "proposals_csv",
    "proposals_json",
    "rank_proposals",
    "set_aside_framed",
    "single_query_clearances",
    "wilson_lower_bound",
    "with_suspects",
]


def wilson_lower_bound(successes: int, trials: int, confidence: float = 0.95) -> float:
    """Lower end of the two-sided Wilson score interval of a binomial proportion.

    Args:
        successes: The number of successes.
        trials: The number of trials (0 gives 0.0).
        confidence: The interval's confidence, in (0, 1).

    Returns:
        The lower bound, in [0, 1].

    Raises:
        ConfigurationError: ``confidence`` is outside (0, 1).

    Example:
        >>> round(wilson_lower_bound(9, 10), 3)
        0.596
    """
    if trials <= 0:
        return 0.0
    if not 0.0 < confidence < 1.0:
        raise ConfigurationError("confidence must be in (0, 1)")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = p + z * z / (2 * trials)
    margin = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    return max(0.0, (centre - margin) / denominator)


class QueryEvidence(BaseModel):
    """The verified evidence about one memory from one distinct query."""

    model_config = ConfigDict(frozen=True)

    memory_id: str
    """The memory's id in your store."""
    content_hash: str
    """SHA-256 of the text the evidence is about."""
    query_id: str
    """The query's id."""
    harmful_at: datetime | None
    """Latest verified clearance of the memory for this query."""
    beneficial_at: datetime | None
    """Latest full attribution that found it beneficial for this query."""
    harmful_shapley_sum: float = 0.0
    """Sum of the memory's Shapley values over the harmful runs that have one."""
    harmful_shapley_count: int = 0
    """The number of those runs."""
    run_ids: list[str] = Field(default_factory=list)
    """Runs holding the evidence."""
    needed: bool = False
    """The latest verdict is that this question needs the memory (blocks any proposal)."""

    @property
    def verdict(self) -> str:
        """``harmful``, ``beneficial`` or ``neutral``: the later of the two findings wins."""
        if self.harmful_at is not None and (
            self.beneficial_at is None or self.harmful_at >= self.beneficial_at
        ):
            return "harmful"
        if self.beneficial_at is not None:
            return "beneficial"
        return "neutral"


class ReviewProposal(BaseModel):
    """A memory proposed for permanent removal, for a person to approve or reject."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rank: int
    """1 = strongest evidence."""
    memory_id: str
    """The memory's id in your store."""
    content_hash: str
    """SHA-256 of the text the evidence is about: act only if the stored text still has it."""
    harmful_queries: int
    """Distinct queries for which a verified clearance removed it."""
    beneficial_queries: int
    """Distinct queries for which it verifiably helped."""
    observed_queries: int
    """Distinct queries with a verified outcome while it was retrieved."""
    consistency: float
    """harmful / (harmful + beneficial)."""
    lower_bound: float
    """Wilson lower confidence bound of ``consistency`` (the ranking key)."""
    confidence: float
    """The confidence of ``lower_bound``."""
    mean_shapley: float | None = None
    """Mean Shapley value over the harmful observations that have one."""
    query_ids: list[str] = Field(default_factory=list)
    """The harmful queries (at most 20)."""
    run_ids: list[str] = Field(default_factory=list)
    """Runs holding the harmful evidence (at most 20)."""
    tier: Literal["proposed", "single_query"] = "proposed"
    """``proposed``: harmful on at least ``min_queries`` questions; ``single_query``: a
    verified clearance on fewer (shown, not proposed: :func:`single_query_clearances`)."""


def blocked(items: Sequence[QueryEvidence]) -> bool:
    """A memory that some question needs is never proposed (its latest verdict there).

    Args:
        items: One memory's evidence, one item per question.

    Returns:
        True when the memory must not be proposed.
    """
    return any(e.needed and e.verdict == "beneficial" for e in items)


def rank_proposals(
    evidence: Iterable[QueryEvidence],
    *,
    min_queries: int = 2,
    min_consistency: float = 0.8,
    confidence: float = 0.95,
) -> list[ReviewProposal]:
    """Aggregate per-query evidence into ranked proposals (module docstring).

    Args:
        evidence: The latest verified evidence per memory, content hash and query.
        min_queries: The fewest distinct queries in which a memory was harmful.
        min_consistency: The lowest harmful / (harmful + beneficial) share of its queries.
        confidence: The confidence of the Wilson lower bound that ranks the proposals.

    Returns:
        The proposals, strongest evidence first.

    Raises:
        ConfigurationError: ``min_queries`` is less than 1 or ``confidence`` is outside
            (0, 1).
    """
    if min_queries < 1:
        raise ConfigurationError("min_queries must be at least 1")
    groups: dict[tuple[str, str], list[QueryEvidence]] = {}
    for item in evidence:
        groups.setdefault((item.memory_id, item.content_hash), []).append(item)
    proposals: list[dict[str, Any]] = []
    for (memory_id, digest), items in groups.items():
        if blocked(items):
            continue
        harmful = [e for e in items if e.verdict == "harmful"]
        beneficial = sum(1 for e in items if e.verdict == "beneficial")
        h = len(harmful)
        if h < min_queries:
            continue
        consistency = h / (h + beneficial)
        if consistency < min_consistency:
            continue
        count = sum(e.harmful_shapley_count for e in harmful)
        total = sum(e.harmful_shapley_sum for e in harmful)
        proposals.append(
            {
                "memory_id": memory_id,
                "content_hash": digest,
                "harmful_queries": h,
                "beneficial_queries": beneficial,
                "observed_queries": len(items),
                "consistency": consistency,
                "lower_bound": wilson_lower_bound(h, h + beneficial, confidence),
                "confidence": confidence,
                "mean_shapley": total / count if count else None,
                "query_ids": sorted(e.query_id for e in harmful)[:20],
                "run_ids": sorted({r for e in harmful for r in e.run_ids})[:20],
            }
        )
    proposals.sort(
        key=lambda p: (
            -p["lower_bound"],
            -p["harmful_queries"],
            p["mean_shapley"] if p["mean_shapley"] is not None else 0.0,
            p["memory_id"],
        )
    )
    return [ReviewProposal(rank=i + 1, **p) for i, p in enumerate(proposals)]


def single_query_clearances(
    evidence: Iterable[QueryEvidence],
    *,
    min_queries: int = 2,
    min_consistency: float = 0.8,
    confidence: float = 0.95,
) -> list[ReviewProposal]:
    """The memories verified harmful on fewer than ``min_queries`` questions: their own tier.

    The same evidence, blocking and consistency rules as :func:`rank_proposals`, for the
    memories it does not propose yet because too few questions proved them harmful (the
    first verified clearance of a memory is one of them).

    Args:
        evidence: The latest verified evidence per memory, content hash and query.
        min_queries: The proposals' threshold (these are below it).
        min_consistency: The lowest harmful / (harmful + beneficial) share of its queries.
        confidence: The confidence of the Wilson lower bound that ranks them.

    Returns:
        Ranked entries with ``tier="single_query"`` (none when ``min_queries`` is 1).

    Raises:
        ConfigurationError: ``min_queries`` is less than 1 or ``confidence`` is outside
            (0, 1).
    """
    if min_queries < 1:
        raise ConfigurationError("min_queries must be at least 1")
    below = [
        p
        for p in rank_proposals(
            evidence, min_queries=1, min_consistency=min_consistency, confidence=confidence
        )
        if p.harmful_queries < min_queries
    ]
    return [
        p.model_copy(update={"rank": i + 1, "tier": "single_query"}) for i, p in enumerate(below)
    ]


_CSV_FIELDS = (
    "rank",
    "memory_id",
    "content_hash",
    "harmful_queries",
    "beneficial_queries",
    "observed_queries",
    "consistency",
    "lower_bound",
    "confidence",
    "mean_shapley",
)


def proposals_json(proposals: Sequence[ReviewProposal], **context: Any) -> str:
    """The proposals as a JSON document.

    Args:
        proposals: The ranked proposals.
        **context: Top-level fields written with them (namespace, settings, time...).

    Returns:
        The JSON text.
    """
    document = {
        **context,
        "note": "proposals only: meclear never deletes memories; a person decides",
        "proposals": [p.model_dump(mode="json") for p in proposals],
    }
    return json.dumps(document, indent=2, default=str)


def _cell(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula is prefixed with ``'``."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def proposals_csv(proposals: Sequence[ReviewProposal]) -> str:
    """The proposals as CSV, one row each with the main columns.

    Memory ids are hostile text, so cells that would start a spreadsheet formula are quoted
    with ``'``.

    Args:
        proposals: The ranked proposals.

    Returns:
        The CSV text, with a header row.
    """
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=_CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for p in proposals:
        row = p.model_dump()
        writer.writerow({f: _cell(row[f]) for f in _CSV_FIELDS})
    return out.getvalue()


def carrier_payload(report: Any) -> dict[str, Any]:
    """The carriers of a report's verified harm, as the run record keeps them in ``extra``.

    Args:
        report: A :class:`~meclear_integrations.core.report.ClearanceReport`.

    Returns:
        ``{"carriers": [...], "carrier_status": ...}`` (evidence per carrier), or ``{}``
        when the carriers search did not run.
    """
    status = getattr(report, "carrier_status", None)
    if status is None:
        return {}
    return {
        "carriers": [c.model_dump(mode="json") for c in report.carriers],
        "carrier_status": status,
    }


class CarrierProposal(BaseModel):
    """A memory that carried a verified harm by itself, proposed with its evidence."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_id: str
    """The memory's id in your store."""
    content_hash: str | None
    """SHA-256 of the text the evidence is about (None when the run did not record it)."""
    queries: int
    """Distinct queries whose verified clearance found it a carrier."""
    answers: list[str] = Field(default_factory=list)
    """What the agent answered on the memory alone (redacted, at most 5)."""
    harmful_answers: list[str] = Field(default_factory=list)
    """The failing answers of the full contexts it agreed with (redacted, at most 5)."""
    withheld: int = 0
    """Runs that also withheld it (``clearance_scope="complete"``)."""
    query_ids: list[str] = Field(default_factory=list)
    """The queries (at most 20)."""
    run_ids: list[str] = Field(default_factory=list)
    """The runs holding the evidence (at most 20)."""


def carrier_proposals(runs: Iterable[Any], *, min_queries: int = 1) -> list[CarrierProposal]:
    """Memories named carriers by verified runs, most queries first.

    Only runs with status ``complete`` that recovered count (their clearance was
    verified, so the harmful answer is established); per memory and content hash, each
    distinct query counts once. A carrier is a memory that alone gives the answer a
    verified clearance removed (``core.stages.carriers``): harmful by redundancy, which
    minimal clearance does not remove and attribution scores weakly.

    Args:
        runs: :class:`~meclear_integrations.ledger.records.RunRecord` values.
        min_queries: The fewest distinct queries a proposal needs.

    Returns:
        The proposals.

    Raises:
        ConfigurationError: ``min_queries`` is less than 1.
    """
    if min_queries < 1:
        raise ConfigurationError("min_queries must be at least 1")
    grouped: dict[tuple[str, str | None], dict[str, Any]] = {}
    for run in runs:
        if run.status != "complete" or not run.recovered:
            continue
        hashes = {m.memory_id: m.content_hash for m in run.memories}
        for carrier in run.carriers:
            mid = str(carrier.get("memory_id"))
            entry = grouped.setdefault(
                (mid, hashes.get(mid)),
                {"queries": {}, "answers": [], "harmful": [], "withheld": 0},
            )
            entry["queries"].setdefault(run.query_id, run.run_id)
            for key, field in (("answers", "answer"), ("harmful", "harmful_answer")):
                text = str(carrier.get(field, ""))
                if text and text not in entry[key] and len(entry[key]) < 5:
                    entry[key].append(text)
            entry["withheld"] += bool(carrier.get("withheld"))
    proposals = [
        CarrierProposal(
            memory_id=mid,
            content_hash=content,
            queries=len(e["queries"]),
            answers=e["answers"],
            harmful_answers=e["harmful"],
            withheld=e["withheld"],
            query_ids=list(e["queries"])[:20],
            run_ids=list(e["queries"].values())[:20],
        )
        for (mid, content), e in grouped.items()
        if len(e["queries"]) >= min_queries
    ]
    return sorted(proposals, key=lambda p: (-p.queries, p.memory_id))


class FramedCandidate(BaseModel):
    """A memory review did not propose: every verified removal kept a suspect.

    Instruction-like memories (``core.instructions``) can frame an innocent memory: an
    injection that acts only when the innocent memory is present makes removing the
    innocent memory the smallest verified fix. This is the interaction to look at.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_id: str
    """The memory the clearances removed."""
    suspect_ids: list[str]
    """Instruction-like memories those clearances kept."""
    run_ids: list[str]
    """The runs holding the evidence."""
    harmful_queries: int
    """Distinct queries for which it was removed."""


def with_suspects(extra: dict[str, Any] | None, report: Any) -> dict[str, Any] | None:
    """``extra`` plus the report's suspects (``suspect_ids``, ``suspects_kept``), if any.

    Args:
        extra: The run's free-form extras.
        report: The clearance report being recorded.

    Returns:
        The extras to store.
    """
    suspects = list(getattr(report, "suspect_ids", []) or [])
    if not suspects:
        return extra
    kept = list(getattr(report, "suspects_kept", []) or [])
    return {**(extra or {}), "suspect_ids": suspects, "suspects_kept": kept}


def set_aside_framed(
    proposals: Sequence[ReviewProposal], suspects_kept: dict[str, list[str]]
) -> tuple[list[ReviewProposal], list[FramedCandidate]]:
    """Proposals minus the memories whose every verified removal kept a suspect.

    A run whose clearance left an instruction-like memory in the context does not prove
    the removed memory harmful: the injection may act only through it. A proposal whose
    harmful runs all kept a suspect is returned as a :class:`FramedCandidate` instead (ranks
    of the rest renumbered).

    Args:
        proposals: Ranked proposals.
        suspects_kept: run id -> the suspects that run's clearance kept.

    Returns:
        The proposals still standing and the set-aside interactions.
    """
    kept: list[ReviewProposal] = []
    framed: list[FramedCandidate] = []
    for p in proposals:
        per_run = [suspects_kept.get(r, []) for r in p.run_ids]
        if p.run_ids and all(per_run):
            framed.append(
                FramedCandidate(
                    memory_id=p.memory_id,
                    suspect_ids=sorted({s for group in per_run for s in group}),
                    run_ids=list(p.run_ids),
                    harmful_queries=p.harmful_queries,
                )
            )
        else:
            kept.append(p)
    return [p.model_copy(update={"rank": i + 1}) for i, p in enumerate(kept)], framed
