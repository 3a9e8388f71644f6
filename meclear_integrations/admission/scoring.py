"""Blind-judge order, response-level effects, probe contributions and CMTE (Sec. 4.4-4.5).

Besides the paper's categorical CMTE, :func:`graded_contribution` grades the positive
evidence of a probe by its *strength* (:func:`probe_strength`): how much of what the memory
brought into the treatment response the historical context supports, computed from the
texts the blind judge already reads (probe, both responses, context), with no model call,
no label and no memory text. ``AdmissionConfig.effect = "graded"`` selects it.

References:
    ConMem (Ji, Chen et al., 2026, arXiv:2610.33432), Sec. 4.4-4.5.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

from ..core.errors import ConfigurationError
from .config import CMTEWeights
from .decision import AttributionAudit, ProbeEvaluation
from .labels import Effect, JudgePreference, Preference, ProbeRole
from .reading import content_words

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")

__all__ = [
    "cmte",
    "contribution",
    "effect",
    "graded_contribution",
    "memory_change",
    "probe_strength",
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


def memory_change(query: str, control: str, treatment: str) -> list[frozenset[str]]:
    """What the memory brought into the treatment response: its new content words.

    The distinct content words of ``treatment`` (each as its form set: word and lemmas)
    that neither the control response nor the probe already has. No model call; the same
    texts the blind judge reads.

    Args:
        query: The probe.
        control: The response without the memory.
        treatment: The response with the memory.

    Returns:
        One form set per new word, in order of first occurrence.
    """
    known = content_words(control) | content_words(query)
    out: list[frozenset[str]] = []
    for word in _WORD.findall(treatment):
        forms = content_words(word)
        if forms and not forms & known and forms not in out:
            out.append(forms)
    return out


def probe_strength(
    query: str,
    control: str | None,
    treatment: str | None,
    context: str,
    *,
    kind: Literal["grounded_share", "grounded_count"] = "grounded_count",
    half: float = 2.0,
) -> float:
    """Strength in [0, 1] of a probe's evidence: the part of the memory's change C supports.

    The change is :func:`memory_change`; a word of it is *grounded* when the historical
    context has it (any form). ``grounded_share``: grounded / changed words (scale-free);
    ``grounded_count``: g / (g + ``half``) for g grounded words (``half`` grounded words
    give strength 0.5; more supported particulars, more strength). 0 when nothing changed.
    It grades what the blind judge decides categorically (does the history support the
    personal details?), from its own inputs; it never reads the memory or a label.

    Args:
        query: The probe.
        control: The response without the memory (None: not generated).
        treatment: The response with the memory (None: not generated).
        context: The historical context.
        kind: ``grounded_count`` or ``grounded_share``.
        half: The grounded-word count at strength 0.5 (``grounded_count``).

    Returns:
        The strength.

    Raises:
        ConfigurationError: ``half`` is not positive.

    Example:
        >>> from meclear_integrations.admission.scoring import probe_strength
        >>> probe_strength("Any dinner idea?", "Try pasta.", "Try pasta with shellfish-free sauce.",
        ...                "User: I am allergic to shellfish.", kind="grounded_share")
        0.3333333333333333
    """
    if half <= 0:
        raise ConfigurationError("graded CMTE: half must be > 0")
    if control is None or treatment is None:
        return 0.0
    grounded, changed = _grounded_change(query, control, treatment, context)
    if not changed:
        return 0.0
    if kind == "grounded_share":
        return grounded / changed
    return grounded / (grounded + half)


@lru_cache(maxsize=65_536)
def _grounded_change(query: str, control: str, treatment: str, context: str) -> tuple[int, int]:
    """(grounded, changed) word counts of the memory's change (re-decisions repeat them)."""
    change = memory_change(query, control, treatment)
    where = content_words(context)
    return sum(1 for forms in change if forms & where), len(change)


def graded_contribution(categorical: float, strength: float) -> float:
    """Graded c_i: positive evidence times its strength; negative evidence unchanged.

    Positive evidence (attributed utility the judge confirmed) counts by how much of the
    memory's change the history supports. Negative evidence (attributed unnecessary or
    risky use) keeps its full categorical weight: a stale memory's change is grounded in
    the older turn it restates, so grounding cannot grade harm, and a graded penalty would
    let misaligned memories through.

    Args:
        categorical: The paper's c_i (:func:`contribution`).
        strength: The probe's strength in [0, 1] (:func:`probe_strength`).

    Returns:
        The graded contribution, between 0 and ``categorical`` when positive.
    """
    if categorical <= 0:
        return categorical
    return categorical * min(1.0, max(0.0, strength))


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
