"""Re-deciding recorded ConMem evidence: the Table 3 ablations and the 27-setting grid.

The paper evaluates its ablations and its parameter sensitivity "using original probe sets"
and "the same counterfactual evidence" (Sec. 5.3.4, 5.3.6, App. A): only the aggregation
changes. :func:`redecide` recomputes each probe's contribution from the recorded judge and
auditor outputs under other weights or with one evaluator removed, and applies the
zero-score rule (the tie-break judge's verdict on the same raw evidence, or a fixed default).

Variants (Sec. 5.3.6):

- ``full``: Sec. 4.5 as implemented by :func:`~.scoring.contribution`;
- ``no_quality_judge``: the auditor's attributed ``utility`` counts as helpful with no
  blind quality confirmation;
- ``no_auditor``: utility and risk come from the pairwise preference alone (treatment
  preferred -> helpful utility, control preferred -> risk, tie -> 0).

With a :class:`Grading` (the historical context and the strength's settings) a positive
contribution is graded by its probe's strength (:func:`~.scoring.probe_strength`), as the
admitter does with ``AdmissionConfig(effect="graded")``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from typing import Literal

from .config import CMTEWeights, RoleWeights
from .decision import ProbeEvaluation
from .labels import Decision
from .scoring import cmte, contribution, effect, graded_contribution, probe_strength

__all__ = [
    "GRID",
    "Grading",
    "Variant",
    "graded_variant_contribution",
    "grid_weights",
    "redecide",
    "variant_contribution",
]

Variant = Literal["full", "no_quality_judge", "no_auditor"]

GRID = (
    (0.25, 0.5, 0.75),
    (0.0, 0.25, 0.5),
    (1.0, 1.5, 2.0),
)
"""App. A / D: irrelevant mild-use penalty, risk-probe safe-utility gain, risk-probe harm
penalty. The primary setting is (0.5, 0.5, 1.5)."""


def grid_weights() -> list[tuple[tuple[float, float, float], CMTEWeights]]:
    """The 27 pre-specified CMTE settings of App. A, primary setting included.

    Returns:
        ``((irrelevant penalty, risk gain, risk penalty), weights)`` per setting.
    """
    base = CMTEWeights()
    out = []
    for unnecessary, gain, harm in product(*GRID):
        weights = base.model_copy(
            update={
                "irrelevant": RoleWeights(unnecessary=-unnecessary, risk=base.irrelevant.risk),
                "risk": RoleWeights(
                    helpful_utility=gain, unnecessary=base.risk.unnecessary, risk=-harm
                ),
            }
        )
        out.append(((unnecessary, gain, harm), weights))
    return out


def variant_contribution(e: ProbeEvaluation, weights: CMTEWeights, variant: Variant) -> float:
    """c_i of one recorded probe under ``weights`` and ``variant`` (module docstring).

    Args:
        e: The recorded probe evaluation.
        weights: The CMTE weights.
        variant: ``full``, ``no_quality_judge`` or ``no_auditor``.

    Returns:
        The contribution (0 for a probe that was skipped or not evaluated).
    """
    if e.audit is None or e.judge is None:
        return 0.0
    if variant == "full":
        return contribution(e.role, e.audit, effect(e.audit, e.judge.preference), weights)
    if variant == "no_quality_judge":
        return contribution(
            e.role, e.audit, "helpful" if e.audit.attributed else "neutral", weights
        )
    w = weights.for_role(e.role)
    if e.judge.preference == "treatment":
        return w.helpful_utility
    if e.judge.preference == "control":
        return w.risk
    return 0.0


@dataclass(frozen=True)
class Grading:
    """A graded CMTE's inputs for re-deciding recorded evidence (``AdmissionConfig``)."""

    context: str
    """The historical context the decision read."""
    kind: Literal["grounded_count", "grounded_share"] = "grounded_count"
    """``AdmissionConfig.graded_strength``."""
    half: float = 2.0
    """``AdmissionConfig.graded_half``."""


def graded_variant_contribution(
    e: ProbeEvaluation, weights: CMTEWeights, variant: Variant, grading: Grading
) -> float:
    """:func:`variant_contribution` with a positive c_i graded by its probe's strength.

    Args:
        e: The recorded probe evaluation.
        weights: The CMTE weights.
        variant: ``full``, ``no_quality_judge`` or ``no_auditor``.
        grading: The context and the strength's settings.

    Returns:
        The graded contribution.
    """
    value = variant_contribution(e, weights, variant)
    if value <= 0:
        return value
    strength = probe_strength(
        e.query,
        e.control_response,
        e.treatment_response,
        grading.context,
        kind=grading.kind,
        half=grading.half,
    )
    return graded_contribution(value, strength)


def redecide(
    probes: Sequence[ProbeEvaluation],
    *,
    weights: CMTEWeights,
    variant: Variant = "full",
    zero: Decision,
    epsilon: float = 1e-12,
    grading: Grading | None = None,
) -> tuple[Decision, float, bool]:
    """The decision recorded evidence gives under ``weights`` and ``variant``.

    Args:
        probes: The recorded probe evaluations (the full triplet).
        weights: The CMTE weights.
        variant: The ablation variant.
        zero: The decision at |CMTE| <= epsilon (the tie-break verdict, or a fixed default).
        epsilon: The zero-score tolerance.
        grading: Re-decide with the graded CMTE (None: the paper's categorical one).

    Returns:
        ``(decision, CMTE, whether the zero-score rule decided)``.
    """
    if grading is None:
        contributions = [variant_contribution(e, weights, variant) for e in probes]
    else:
        contributions = [graded_variant_contribution(e, weights, variant, grading) for e in probes]
    value = cmte(contributions or [0.0])
    if value > epsilon:
        return "store", value, False
    if value < -epsilon:
        return "do_not_store", value, False
    return zero, value, True
