"""Per-memory metadata of a gated clearance, shared by both integrations.

A query a trigger declined comes back with every item unchanged in content; its metadata
under the integration's key says ``status: "skipped"`` and why (``status_reason``, the
trigger's policy and reason). Every returned item of a gated query also carries the run-level
fields of :meth:`~meclear_integrations.guard.gate.GateOutcome.metadata` (trigger, ledger run id,
``ledger_guided``, the ``token_budget`` drop and any side failure in ``notes``).
"""

from __future__ import annotations

from typing import Any

from .gate import GateOutcome

__all__ = ["model_name", "skipped_metadata", "with_outcome"]


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
