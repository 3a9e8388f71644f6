"""The report of a query that a trigger declined: the context unchanged, no model call."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.config import ClearanceConfig
from ..core.memory import Memory, freeze_context
from ..core.report import ClearanceCost, ClearanceReport
from .base import TriggerDecision

__all__ = ["skipped_report"]


def skipped_report(
    memories: Sequence[Memory], config: ClearanceConfig, decision: TriggerDecision
) -> ClearanceReport:
    """The report of a declined query: ``status="skipped"``, every memory kept, nothing evaluated.

    Args:
        memories: The retrieved context.
        config: The engine configuration, recorded on the report.
        decision: The trigger's decision (its ``status_reason`` says which policy declined
            and why).

    Returns:
        A report with the context unchanged and zero cost.
    """
    context = freeze_context(memories)
    return ClearanceReport(
        baseline_value=None,
        final_value=None,
        recovered=False,
        kept=list(context),
        cleared=[],
        attributions=[],
        candidates=[],
        cost=ClearanceCost(coalitions=0, evaluator_calls=0, cache_hits=0, wall_seconds=0.0),
        config=config,
        status="skipped",
        status_reason=decision.status_reason,
    )
