"""Review decisions made where teams already review: LangSmith, Phoenix, Langfuse.

A reviewer marks a proposal in the tool the traces are in; these readers turn the marks
into ledger decisions (``ledger.tombstones.record_decision``) that ``apply_reviews`` then
writes back. Each mark is recorded once (its id in the tool is the decision's
``source_id``), and only for a memory the ledger currently proposes: the decision carries
the proposal's content hash and evidence runs, so an edit since the review is caught at
apply time. What a mark looks like:

- **LangSmith**: feedback with key ``meclear.review_decision`` on a traced run that holds a
  proposal's evidence (where ``langsmith_proposals`` wrote ``meclear.review_proposal``);
  ``score`` 1 accepts, 0 rejects (or ``value`` ``accept`` / ``reject``); the memory is
  ``extra["memory_id"]``, else ``value`` when it names a proposed memory, else the one
  proposal whose evidence the run holds; ``comment`` is the reason.
- **Phoenix**: a span annotation named ``meclear review decision`` (from the UI or the
  API), label ``accept`` / ``reject``, explanation = the reason, on a span you map to its
  ledger run (``spans={span_id: ledger run id}``), or with ``metadata.memory_id``.
- **Langfuse**: a score named ``meclear_review_decision`` (CATEGORICAL ``accept`` /
  ``reject``, or NUMERIC / BOOLEAN 1 / 0) on a trace the ledger recorded as the run's
  tracing id, or with ``metadata.memory_id``; ``comment`` is the reason.

A mark that names no proposed memory, or a run holding several proposals without naming
one, is skipped and reported (:class:`ImportResult`), never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..ledger.tombstones import Decision, ReviewDecision, record_decision

__all__ = [
    "LANGFUSE_NAME",
    "LANGSMITH_KEY",
    "PHOENIX_NAME",
    "Annotation",
    "ImportResult",
    "import_decisions",
    "langfuse_decisions",
    "langsmith_decisions",
    "phoenix_decisions",
]

LANGSMITH_KEY = "meclear.review_decision"
"""LangSmith feedback key of a reviewer's decision."""
PHOENIX_NAME = "meclear review decision"
"""Phoenix span annotation name of a reviewer's decision."""
LANGFUSE_NAME = "meclear_review_decision"
"""Langfuse score name of a reviewer's decision."""

_ACCEPT = {"accept", "accepted", "approve", "approved", "retire", "remove", "yes", "true"}
_REJECT = {"reject", "rejected", "keep", "deny", "no", "false"}


@dataclass(frozen=True)
class Annotation:
    """One reviewer's mark, read from a tool, before it is matched to a proposal."""

    source: str
    """``langsmith``, ``phoenix`` or ``langfuse``."""
    source_id: str
    """The mark's id in the tool."""
    verdict: Decision | None
    """``accepted``, ``rejected``, or None when the mark says neither."""
    ledger_run: str | None = None
    """The ledger run (or tracing run id) the mark is on."""
    memory_id: str | None = None
    """The memory it names, if it names one."""
    actor: str | None = None
    """Who made it."""
    reason: str | None = None
    """Why."""


@dataclass
class ImportResult:
    """What :func:`import_decisions` recorded and what it skipped."""

    recorded: list[ReviewDecision] = field(default_factory=list)
    """The decisions recorded (or found already recorded)."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(the mark's id, why it was skipped)."""


def verdict_of(label: Any = None, score: Any = None) -> Decision | None:
    """``accepted`` / ``rejected`` from a label (``accept``, ``reject``...) or a 1 / 0 score.

    Args:
        label: A categorical value.
        score: A number (at least 0.5 accepts).

    Returns:
        The verdict, or None when neither says one.
    """
    if isinstance(label, str):
        text = label.strip().lower()
        if text in _ACCEPT:
            return "accepted"
        if text in _REJECT:
            return "rejected"
    if isinstance(score, bool):
        return "accepted" if score else "rejected"
    if isinstance(score, int | float):
        return "accepted" if score >= 0.5 else "rejected"
    return None


def _run_id(ledger: Any, ref: str | None) -> str | None:
    if not ref:
        return None
    try:
        return str(ledger.find_run(str(ref)).run_id)
    except KeyError:
        return None


def import_decisions(
    ledger: Any, annotations: Iterable[Annotation], *, min_queries: int = 2
) -> ImportResult:
    """Record the marks that accept or reject a current proposal (module docstring).

    Args:
        ledger: The ``HarmLedger``.
        annotations: The marks.
        min_queries: The proposals' ``min_queries`` (as ``meclear ledger review``).

    Returns:
        The decisions recorded and the marks skipped, with why.
    """
    proposals = {
        p.memory_id: p for p in ledger.review(min_queries=min_queries, include_retired=True)
    }
    result = ImportResult()
    for mark in annotations:
        if mark.verdict is None:
            result.skipped.append((mark.source_id, "says neither accept nor reject"))
            continue
        if mark.memory_id is not None and mark.memory_id not in proposals:
            result.skipped.append((mark.source_id, f"{mark.memory_id!r} is not proposed"))
            continue
        memory = mark.memory_id
        if memory is None:
            run = _run_id(ledger, mark.ledger_run)
            holding = [m for m, p in proposals.items() if run is not None and run in p.run_ids]
            if len(holding) != 1:
                why = "holds no proposal's evidence" if not holding else "holds several"
                result.skipped.append((mark.source_id, f"names no proposed memory; its run {why}"))
                continue
            memory = holding[0]
        p = proposals[memory]
        result.recorded.append(
            record_decision(
                ledger,
                memory,
                decision=mark.verdict,
                source=mark.source,
                source_id=mark.source_id,
                actor=mark.actor,
                reason=mark.reason,
                content_hash=p.content_hash,
                run_ids=p.run_ids,
                query_ids=p.query_ids,
            )
        )
    return result


def _get(item: Any, name: str, default: Any = None) -> Any:
    if isinstance(item, Mapping):
        return item.get(name, default)
    return getattr(item, name, default)


def langsmith_decisions(
    ledger: Any,
    *,
    client: Any = None,
    run_ids: Sequence[str] | None = None,
    key: str = LANGSMITH_KEY,
    min_queries: int = 2,
) -> ImportResult:
    """Read reviewers' LangSmith feedback on the proposals' runs and record it.

    Args:
        ledger: The ``HarmLedger``.
        client: A ``langsmith.Client`` (default: one from the environment).
        run_ids: The LangSmith runs to read (default: the traced runs of every ledger run
            holding a proposal's evidence).
        key: The feedback key.
        min_queries: The proposals' ``min_queries``.

    Returns:
        What was recorded and skipped.
    """
    if client is None:
        from langsmith import Client

        client = Client()
    if run_ids is None:
        traced = {
            ledger.find_run(r).trace_run_id
            for p in ledger.review(min_queries=min_queries, include_retired=True)
            for r in p.run_ids
        }
        run_ids = sorted(str(r) for r in traced if r)
    if not run_ids:
        return ImportResult()
    marks = []
    for fb in client.list_feedback(run_ids=list(run_ids), feedback_key=[key]):
        extra = _get(fb, "extra") or {}
        value = _get(fb, "value")
        named = extra.get("memory_id") if isinstance(extra, Mapping) else None
        if named is None and isinstance(value, str) and verdict_of(value) is None:
            named = value
        source = _get(fb, "feedback_source")
        meta = (_get(source, "metadata") or {}) if source is not None else {}
        marks.append(
            Annotation(
                source="langsmith",
                source_id=str(_get(fb, "id")),
                verdict=verdict_of(value, _get(fb, "score")),
                ledger_run=str(_get(fb, "run_id")),
                memory_id=named,
                actor=meta.get("user_name") or meta.get("user_id") or "langsmith",
                reason=_get(fb, "comment"),
            )
        )
    return import_decisions(ledger, marks, min_queries=min_queries)


def phoenix_decisions(
    ledger: Any,
    spans: Mapping[str, str],
    *,
    project: str,
    client: Any = None,
    name: str = PHOENIX_NAME,
    min_queries: int = 2,
) -> ImportResult:
    """Read reviewers' Phoenix span annotations and record them.

    Args:
        ledger: The ``HarmLedger``.
        spans: Span id (16 hex characters) -> the ledger run it traced (the cookbook
            ``phoenix_review.py`` prints both).
        project: The Phoenix project.
        client: A ``phoenix.client.Client`` (default: one from the environment).
        name: The annotation name.
        min_queries: The proposals' ``min_queries``.

    Returns:
        What was recorded and skipped.
    """
    if client is None:
        try:
            from phoenix.client import Client
        except ImportError as exc:
            raise ImportError(
                "Phoenix needs the phoenix extra: pip install 'meclear-integrations[phoenix]'"
            ) from exc
        client = Client()
    found = client.spans.get_span_annotations(
        span_ids=list(spans), project_identifier=project, include_annotation_names=[name]
    )
    marks = []
    for a in found:
        result = _get(a, "result") or {}
        metadata = _get(a, "metadata") or {}
        marks.append(
            Annotation(
                source="phoenix",
                source_id=str(_get(a, "id")),
                verdict=verdict_of(_get(result, "label"), _get(result, "score")),
                ledger_run=spans.get(str(_get(a, "span_id"))),
                memory_id=metadata.get("memory_id"),
                actor=_get(a, "user_id") or _get(a, "identifier") or "phoenix",
                reason=_get(result, "explanation"),
            )
        )
    return import_decisions(ledger, marks, min_queries=min_queries)


def _trace_of(score: Any) -> str | None:
    trace = _get(score, "trace_id")
    if trace:
        return str(trace)
    subject = _get(score, "subject")
    if subject is not None and _get(subject, "kind") in ("trace", "TRACE"):
        return str(_get(subject, "id"))
    return None


def langfuse_decisions(
    ledger: Any,
    *,
    client: Any = None,
    name: str = LANGFUSE_NAME,
    min_queries: int = 2,
    page_size: int = 100,
) -> ImportResult:
    """Read reviewers' Langfuse scores and record them.

    Args:
        ledger: The ``HarmLedger``.
        client: A ``langfuse.Langfuse`` client (default: ``get_client()``).
        name: The score name.
        min_queries: The proposals' ``min_queries``.
        page_size: Scores per request.

    Returns:
        What was recorded and skipped.
    """
    if client is None:
        try:
            from langfuse import get_client
        except ImportError as exc:
            raise ImportError(
                "Langfuse needs the langfuse extra: pip install 'meclear-integrations[langfuse]'"
            ) from exc
        client = get_client()
    marks = []
    cursor = None
    while True:
        page = client.api.scores.get_many(name=name, limit=page_size, cursor=cursor)
        for score in _get(page, "data") or []:
            value = _get(score, "value")
            metadata = _get(score, "metadata") or {}
            marks.append(
                Annotation(
                    source="langfuse",
                    source_id=str(_get(score, "id")),
                    verdict=verdict_of(
                        value if isinstance(value, str) else _get(score, "string_value"),
                        value if not isinstance(value, str) else None,
                    ),
                    ledger_run=_trace_of(score),
                    memory_id=metadata.get("memory_id") if isinstance(metadata, Mapping) else None,
                    actor=_get(score, "author_user_id") or "langfuse",
                    reason=_get(score, "comment"),
                )
            )
        cursor = _get(_get(page, "meta"), "cursor")
        if not cursor:
            break
    return import_decisions(ledger, marks, min_queries=min_queries)
