"""The per-item metadata of a flow's result, shared by both integrations.

:func:`result_metadata` says which items to return, in retrieval order, and the dict each
carries under the integration's metadata key; the integration copies its documents or
nodes at those positions. Every returned item carries ``status``: ``complete``,
``unverified``, ``failed``, ``skipped`` (guard or trigger), or in background mode
``withheld`` / ``kept`` (see :mod:`.background`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..guard.gated_metadata import skipped_metadata, with_outcome
from ..runtime.payloads import (
    EdgeCasePolicy,
    exception_summary,
    kept_metadata,
    shadow_metadata,
)
from .steps import FlowResult

__all__ = ["failed_metadata", "result_metadata"]


def result_metadata(
    result: FlowResult, ids: Sequence[str], *, policy: EdgeCasePolicy, shadow: bool = False
) -> list[tuple[int, dict[str, Any]]]:
    """``(position, metadata)`` of every item to return (not for ``failed`` results).

    Args:
        result: The flow's result.
        ids: The items' memory ids, in retrieval order.
        policy: What to do when every item was cleared.
        shadow: Return every item, marked with what clearance decided.

    Returns:
        The pairs, in retrieval order.

    Raises:
        ValueError: ``result`` is a failure (the integration fails open on its own items).
    """
    if result.kind == "empty":
        return []
    if result.kind == "background":
        return list(result.background.metadata(ids))
    if result.kind == "failed" or result.report is None:
        raise ValueError("a failed flow has no result metadata")
    outcome = result.outcome
    if result.kind == "declined" and outcome is not None:
        return [(i, skipped_metadata(mid, outcome)) for i, mid in enumerate(ids)]
    if result.kind == "guarded" or outcome is None:
        if shadow and result.kind == "cleared":
            return shadow_metadata(ids, result.report)
        return kept_metadata(ids, result.report, policy)
    chosen = (
        shadow_metadata(ids, result.report) if shadow else kept_metadata(ids, result.report, policy)
    )
    dropped = set(outcome.budget.dropped_ids) if outcome.budget is not None else set()
    return [
        (i, with_outcome(meta, outcome))
        for i, meta in chosen
        if shadow or meta["memory_id"] not in dropped
    ]


def failed_metadata(memory_id: str, error: BaseException) -> dict[str, Any]:
    """The metadata of an item returned unchanged because clearance failed (fail-open).

    Args:
        memory_id: The item's memory id.
        error: The failure that was absorbed (its text redacted).

    Returns:
        ``memory_id``, ``error``, ``cleared`` (False), ``status`` (``failed``), ``failure``.
    """
    failure = exception_summary(error)
    return {
        "memory_id": memory_id,
        "error": failure["error"],
        "cleared": False,
        "status": "failed",
        "failure": failure,
    }
