"""Blind-judge order, response-level effects, probe contributions and CMTE (Sec. 4.4-4.5).

References:
    ConMem (Ji, Chen et al., 2026, arXiv:2610.33432), Sec. 4.4-4.5.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

from ..core.errors import ConfigurationError
from .config import CMTEWeights
from .decision import AttributionAudit, ProbeEvaluation
from .labels import Effect, JudgePreference, Preference, ProbeRole

__all__ = [
    "cmte",
    "contribution",
    "effect",
    "render_evidence",
    "treatment_position",
    "unit_score",
    "unmap_preference",
]


def treatment_position(
    seed: int, candidate: str, context: str, role: ProbeRole
) -> Literal["A", "B"]:
    """Deterministically randomised position of the treatment response (Sec. 4.4).

    A SHA-256 of (seed, role, candidate, context): stable across processes and runs,
    balanced across candidates, independent of anything the judge sees.

    Args:
        seed: The configuration's seed.
        candidate: The candidate memory's text.
        context: The historical context.
        role: The probe role.

    Returns:
        ``"A"`` or ``"B"``.
    """
    digest = hashlib.sha256(f"{seed}\x1f{role}\x1f{candidate}\x1f{context}".encode()).digest()
    return "A" if digest[0] & 1 == 0 else "B"


def unmap_preference(raw: JudgePreference, treatment_at: Literal["A", "B"]) -> Preference:
    """The judge's A/B/TIE mapped back to treatment/control/tie.

    Args:
        raw: The judge's ``A`` / ``B`` / ``TIE``.
        treatment_at: Where the treatment response was shown.

    Returns:
        ``treatment``, ``control`` or ``tie``.
    """
    if raw == "TIE":
        return "tie"
    return "treatment" if raw == treatment_at else "control"


def effect(audit: AttributionAudit, preference: Preference) -> Effect:
    """E_i: neutral unless the memory was used and changed the response; then the judge.

    Args:
        audit: The attribution auditor's labels.
        preference: The judge's preference, unmapped.

    Returns:
        The probe's effect.
    """
    if not audit.attributed or preference == "tie":
        return "neutral"
    return "helpful" if preference == "treatment" else "harmful"


def contribution(
    role: ProbeRole, audit: AttributionAudit, probe_effect: Effect, weights: CMTEWeights
) -> float:
    """Signed c_i (Sec. 4.5).

    Positive evidence needs attributed ``utility`` and a judge preferring the treatment;
    negative evidence needs attributed ``unnecessary`` or ``risk`` use (attributed = used
    and materially changed). Every other outcome contributes 0.

    Args:
        role: The probe role.
        audit: The attribution auditor's labels.
        probe_effect: The probe's effect.
        weights: The CMTE weights.

    Returns:
        The signed contribution.
    """
    if not audit.attributed:
        return 0.0
    w = weights.for_role(role)
    if audit.label == "utility":
        return w.helpful_utility if probe_effect == "helpful" else 0.0
    if audit.label == "unnecessary":
        return w.unnecessary
    if audit.label == "risk":
        return w.risk
    return 0.0


def cmte(contributions: Sequence[float]) -> float:
    """CMTE(M) = (1/K) sum_i c_i with K = len(contributions) (= 3).

    Args:
        contributions: The per-probe contributions.

    Returns:
        The CMTE score.

    Raises:
        ConfigurationError: ``contributions`` is empty.

    Example:
        >>> from meclear_integrations.admission.scoring import cmte
        >>> cmte([1.0, 0.0, -0.5])
        0.16666666666666666
    """
    if not contributions:
        raise ConfigurationError("CMTE needs at least one probe contribution")
    return sum(contributions) / len(contributions)


def unit_score(value: float, weights: CMTEWeights) -> float:
    """CMTE rescaled piecewise-linearly to [0, 1]: lowest -> 0, 0 -> 0.5, highest -> 1.

    Args:
        value: The CMTE score.
        weights: The CMTE weights (they set the reachable range).

    Returns:
        The score in [0, 1].
    """
    low, high = weights.bounds()
    if value >= 0:
        return 0.5 if high <= 0 else min(1.0, 0.5 + 0.5 * value / high)
    return 0.5 if low >= 0 else max(0.0, 0.5 - 0.5 * value / low)


def render_evidence(probes: Sequence[ProbeEvaluation]) -> str:
    """The raw counterfactual evidence for the tie-break judge: no weights, no scores.

    Args:
        probes: The evaluated probes.

    Returns:
        The evidence text.
    """
    blocks = []
    for p in probes:
        judge = p.judge
        audit = p.audit
        preferred = {
            "treatment": "the response WITH memory access",
            "control": "the response WITHOUT memory access",
            "tie": "neither (tie)",
        }[judge.preference if judge else "tie"]
        blocks.append(
            "\n".join(
                [
                    f"[{p.role} probe] query: {p.query}",
                    f"response without memory: {p.control_response}",
                    f"response with memory: {p.treatment_response}",
                    f"quality judge preferred: {preferred}"
                    + (f" ({judge.explanation})" if judge else ""),
                    f"attribution audit: memory used={audit.memory_used}, "
                    f"materially changed={audit.materially_changed}, label={audit.label} "
                    f"({audit.explanation})"
                    if audit
                    else "attribution audit: unavailable",
                ]
            )
        )
    return "\n\n".join(blocks)
