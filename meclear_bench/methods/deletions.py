"""What a baseline deletes, and the flagging rules shared by the surrogate baselines.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 17-20.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from ..oracle import CaseOracle
from ..settings import ClearanceMode

__all__ = ["FlagRule", "flag_order", "harm_ranking", "settle_clearance", "verified_clearance"]

FlagRule = Literal["tolerance", "relative"]
"""``tolerance``: flag w_i < -tau. ``relative``: also require w_i to be at least half the
most negative weight (w_i <= min(w) / 2), so a small negative weight next to a large one
is not flagged."""


def flag_order(weights: Sequence[float], tau: float, rule: FlagRule = "tolerance") -> list[int]:
    """Positions flagged harmful, most negative first (ties by retrieval order).

    Args:
        weights: Per position, the method's contribution (negative: harmful).
        tau: The harm tolerance.
        rule: ``tolerance`` or ``relative`` (:data:`FlagRule`).

    Returns:
        The flagged positions.
    """
    flagged = [i for i, w in enumerate(weights) if w < -tau]
    if rule == "relative" and flagged:
        floor = min(weights) / 2
        flagged = [i for i in flagged if weights[i] <= floor]
    return sorted(flagged, key=lambda i: (weights[i], i))


def verified_clearance(
    oracle: CaseOracle, order: Sequence[int]
) -> tuple[list[int], list[dict], str]:
    """Verify the nested candidates C_j (Eq. 17) along ``order`` by the run's rule.

    The rule is the engine's (Eq. 18-20). Returns the cleared positions, the candidates tried
    and the status.

    Args:
        oracle: The case's task values under the run's trial policy.
        order: The positions, highest priority first.
    """
    return oracle.verified_clearance(order)


def settle_clearance(
    mode: ClearanceMode,
    *,
    verifies_in_paper: bool,
    oracle: CaseOracle,
    order: Sequence[int],
) -> tuple[list[int], list[dict], str]:
    """What a method deletes under the run's clearance mode (see ``BenchSettings.clearance``).

    Args:
        mode: ``verified``, ``paper`` or ``direct``.
        verifies_in_paper: Whether the paper verifies this method's clearance.
        oracle: The case's task values.
        order: The flagged positions, highest priority first.

    Returns:
        The cleared positions, the candidates tried and the status.
    """
    verify = mode == "verified" or (mode == "paper" and verifies_in_paper)
    if verify:
        return verified_clearance(oracle, order)
    return list(order), [], "complete"


def harm_ranking(ids: Sequence[str], harm: Mapping[str, float]) -> list[str]:
    """Memories with positive harm (evidence of harm), most harmful first, ties by retrieval order.

    ``harm`` is oriented so that larger means more harmful (e.g. minus a Shapley value).

    Args:
        ids: The memory ids, in retrieval order.
        harm: Memory id -> evidence of harm.

    Returns:
        The ranked ids.
    """
    position = {mid: i for i, mid in enumerate(ids)}
    ranked = [mid for mid in ids if harm.get(mid, 0.0) > 1e-12]
    return sorted(ranked, key=lambda mid: (-harm[mid], position[mid]))
