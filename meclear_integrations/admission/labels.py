"""The closed label sets of ConMem (Sec. 4.2-4.5, App. B.7)."""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "PROBE_ROLES",
    "REJECTION_REASONS",
    "AttributionLabel",
    "Decision",
    "Effect",
    "JudgePreference",
    "Preference",
    "ProbeRole",
    "ReasonType",
    "RejectionReason",
]

ProbeRole = Literal["relevant", "irrelevant", "risk"]
"""The probe triplet Q = {q_rel, q_irr, q_risk} (Sec. 4.2)."""
PROBE_ROLES: tuple[ProbeRole, ...] = get_args(ProbeRole)

Decision = Literal["store", "do_not_store"]
"""The admission outcome y-hat."""

JudgePreference = Literal["A", "B", "TIE"]
"""What the blind judge says, in presentation positions (Sec. 4.4)."""

Preference = Literal["treatment", "control", "tie"]
"""The judge's preference un-mapped to the counterfactual conditions."""

AttributionLabel = Literal["utility", "unnecessary", "neutral", "risk"]
"""P_i of the attribution auditor (Sec. 4.4)."""

Effect = Literal["helpful", "neutral", "harmful"]
"""Response-level effect E_i (Sec. 4.4)."""

RejectionReason = Literal[
    "context_misapplication",
    "memory_omission",
    "granularity_mismatch",
    "over_inference",
    "stale_memory_use",
    "privacy_refusal",
    "privacy_overuse",
    "attribution_confusion",
    "identity_mis_inference",
    "incomplete_memory_use",
    "false_memory_use",
]
"""Post-hoc reasons of a do-not-store decision (App. B.7 spelling)."""
REJECTION_REASONS: tuple[str, ...] = get_args(RejectionReason)

ReasonType = Literal["directly_relevant", RejectionReason]
"""Reason type of any decision: ``directly_relevant`` for store (Sec. 4.5)."""
