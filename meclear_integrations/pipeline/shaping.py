"""The per-item metadata of a flow's result, shared by both integrations.

:func:`result_metadata` says which items to return, in retrieval order, and the dict each
carries under the integration's metadata key; the integration copies its documents or
nodes at those positions. Every returned item carries ``status``: ``complete``,
``unverified``, ``failed``, ``skipped`` (guard or trigger), or in background mode
``withheld`` / ``kept`` (see :mod:`.background`).

A gated query's items carry the gate's fields too: a query a trigger declined comes back with
every item unchanged in content, its metadata saying ``status: "skipped"`` and why
(``status_reason``, the trigger's policy and reason; :func:`skipped_metadata`), and every
returned item of a gated query carries the run-level fields of
:meth:`~meclear_integrations.guard.gate.GateOutcome.metadata` (trigger, ledger run id,
``ledger_guided``, the ``token_budget`` drop and any side failure in ``notes``;
:func:`with_outcome`). :func:`model_name` names a model for the ledger's record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..guard.gate import GateOutcome
from ..runtime.payloads import (
    EdgeCasePolicy,
    exception_summary,
    kept_metadata,
    shadow_metadata,
)
from .steps import FlowResult

__all__ = ["failed_metadata", "model_name", "result_metadata", "skipped_metadata", "with_outcome"]


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


def skipped_metadata(memory_id: str, outcome: GateOutcome) -> dict[str, Any]:
    """The metadata dict of one item of a declined query.

    Args:
        memory_id: The item's memory id.
        outcome: The gate's outcome.

    Returns:
        ``status: "skipped"`` with the gate's run-level fields.
    """
    return {
        "memory_id": memory_id,
        "loo_effect": None,
        "loo_label": None,
        "shapley": None,
        "shapley_interval": None,
        "rank": None,
        "harmful": False,
        "cleared": False,
        "recovered": False,
        "early_exit": False,
        **outcome.metadata(),
    }


def with_outcome(meta: dict[str, Any], outcome: GateOutcome) -> dict[str, Any]:
    """``meta`` (an item's per-memory dict) with the gate's run-level fields added.

    Args:
        meta: The item's per-memory metadata.
        outcome: The gate's outcome.

    Returns:
        A new dict.
    """
    return {**meta, **outcome.metadata()}


def model_name(model: Any) -> str | None:
    """A model's name for the ledger (``model_name`` / ``model`` / class name).

    Args:
        model: A model object, or None.

    Returns:
        The name, or None for no model.
    """
    if model is None:
        return None
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__
