"""A clearance report as ledger rows (redacted; texts only when asked for)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.memory import Memory
from ..core.redaction import redact, redact_payload
from ..core.report import ClearanceReport
from ..runtime.hashing import content_hash
from .records import RunMode

__all__ = ["candidate_rows", "memory_rows", "run_mode"]


def run_mode(report: ClearanceReport, guided_by: str = "ledger") -> RunMode:
    """How the report's decision was reached (``records.RunMode``).

    Args:
        report: The clearance report.
        guided_by: Who supplied the prior candidate, ``ledger`` or ``feedback``.

    Returns:
        The mode.
    """
    if report.status != "complete":
        return report.status
    if not report.kept and not report.cleared:
        return "empty"
    if report.early_exit:
        return "early_exit"
    if report.clearance_search == "prior":
        return "feedback_guided" if guided_by == "feedback" else "ledger_guided"
    return "full"


def context_of(report: ClearanceReport, context: Sequence[Memory] | None) -> list[Memory]:
    """The decision's context in retrieval order.

    Args:
        report: The clearance report.
        context: The memories given (None: rebuilt from the report).

    Returns:
        The memories.
    """
    if context is not None:
        return list(context)
    withheld = list(getattr(report, "withheld", []))  # carriers (clearance_scope="complete")
    if report.attributions:
        by_id = {m.id: m for m in [*report.kept, *report.cleared, *withheld]}
        ordered = sorted(report.attributions, key=lambda a: a.position)
        return [by_id[a.memory_id] for a in ordered if a.memory_id in by_id]
    return [*report.kept, *report.cleared, *withheld]


def memory_rows(
    report: ClearanceReport,
    context: Sequence[Memory],
    *,
    namespace: str,
    store_text: bool,
) -> list[dict[str, Any]]:
    """One row per memory of the context (position = retrieval order).

    Args:
        report: The clearance report.
        context: The memories, in retrieval order.
        namespace: The ledger's namespace.
        store_text: Keep the redacted texts.

    Returns:
        The rows.
    """
    cleared = set(report.cleared_ids)
    verified = report.status == "complete" and report.recovered
    prior = set(report.prior_ids)
    attributions = {a.memory_id: a for a in report.attributions}
    rows = []
    for position, memory in enumerate(context):
        a = attributions.get(memory.id)
        rows.append(
            {
                "namespace": namespace,
                "memory_id": memory.id,
                "content_hash": content_hash(memory.content),
                "position": position,
                "memory_text": redact(memory.content) if store_text else None,
                "loo_effect": a.loo_effect if a else None,
                "loo_label": a.loo_label if a else None,
                "shapley": a.shapley if a else None,
                "shapley_lo": a.shapley_interval[0] if a else None,
                "shapley_hi": a.shapley_interval[1] if a else None,
                "rank": a.rank if a else None,
                "harmful": a.harmful if a else (memory.id in cleared and verified),
                "cleared": memory.id in cleared,
                "offered_as_prior": memory.id in prior,
            }
        )
    return rows


def candidate_rows(report: ClearanceReport) -> list[dict[str, Any]]:
    """One row per verified candidate, in the report's order.

    Args:
        report: The clearance report.

    Returns:
        The rows.
    """
    return [
        {
            "position": j,
            "size": c.size,
            "memory_ids": list(c.memory_ids),
            "value": c.value,
            "gain": c.gain,
            "recovered": c.recovered,
            "admissible": c.admissible,
            "trials": c.trials,
        }
        for j, c in enumerate(report.candidates)
    ]


def safe_text(value: str | None, limit: int = 200) -> str | None:
    """A short, redacted text field (None stays None).

    Args:
        value: The text.
        limit: The most characters kept.

    Returns:
        The text.
    """
    return None if value is None else redact(str(value))[:limit]


def safe_payload(value: dict[str, Any] | None) -> dict[str, Any]:
    """A JSON-able, redacted copy of a free-form dict.

    Args:
        value: The dict (None: empty).

    Returns:
        The copy.
    """
    return redact_payload(dict(value or {}))
