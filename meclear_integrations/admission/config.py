"""Admission configuration with the ConMem paper's defaults (Sec. 4.5, Sec. 5.2)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .labels import ProbeRole

__all__ = [
    "CHEAP_TIE_BREAK",
    "DEFAULT_MAX_CANDIDATE_CHARS",
    "DEFAULT_MAX_CONTEXT_CHARS",
    "AdmissionConfig",
    "CMTEWeights",
    "RoleWeights",
    "cheap_config",
]

DEFAULT_MAX_CANDIDATE_CHARS = 4_000
"""A memory is a fact or a preference, not a document (about 1,000 tokens)."""
DEFAULT_MAX_CONTEXT_CHARS = 100_000
"""The historical context goes into every one of a decision's prompts (about 25k tokens)."""

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class RoleWeights(BaseModel):
    """Signed contribution c_i of one probe role per attributed outcome (Sec. 4.5)."""

    model_config = _FROZEN

    helpful_utility: float = 0.0
    """c_i when the auditor says ``utility`` and the blind judge prefers the treatment."""
    unnecessary: float = 0.0
    """c_i when the auditor attributes ``unnecessary`` personalization to the memory."""
    risk: float = 0.0
    """c_i when the auditor attributes ``risk`` to the memory."""


class CMTEWeights(BaseModel):
    """Weights of the three probe roles; defaults are the paper's primary setting."""

    model_config = _FROZEN

    relevant: RoleWeights = RoleWeights(helpful_utility=1.0, risk=-1.0)
    """Relevant probe: helpful utility +1.0, attributed risk -1.0."""
    irrelevant: RoleWeights = RoleWeights(unnecessary=-0.5, risk=-1.0)
    """Irrelevant probe: unnecessary personalization -0.5, attributed risk -1.0."""
    risk: RoleWeights = RoleWeights(helpful_utility=0.5, unnecessary=-0.5, risk=-1.5)
    """Risk probe: helpful utility +0.5, unnecessary -0.5, attributed risk -1.5."""

    def for_role(self, role: ProbeRole) -> RoleWeights:
        """The weights of ``role``.

        Args:
            role: The probe role (relevant, irrelevant, risk).

        Returns:
            Its weights.
        """
        return getattr(self, role)

    def role_range(self, role: ProbeRole) -> tuple[float, float]:
        """(lowest, highest) contribution c_i of ``role`` (0 is always reachable).

        Args:
            role: The probe role.

        Returns:
            ``(lowest, highest)``.
        """
        w = self.for_role(role)
        values = (0.0, w.helpful_utility, w.unnecessary, w.risk)
        return min(values), max(values)

    def bounds(self) -> tuple[float, float]:
        """(lowest, highest) reachable CMTE: the mean of per-role extremes (K = 3).

        Returns:
            ``(lowest, highest)``.
        """
        roles = (self.relevant, self.irrelevant, self.risk)
        lows = [min(0.0, w.helpful_utility, w.unnecessary, w.risk) for w in roles]
        highs = [max(0.0, w.helpful_utility, w.unnecessary, w.risk) for w in roles]
        return sum(lows) / 3.0, sum(highs) / 3.0


class AdmissionConfig(BaseModel):
    """Settings of one ConMem admitter (paper defaults: weights of Sec. 4.5, eps=1e-12)."""

    model_config = _FROZEN

    weights: CMTEWeights = CMTEWeights()
    """Signed probe contributions per role and attributed outcome (Sec. 4.5)."""
    epsilon: float = Field(default=1e-12, ge=0.0)
    """|CMTE| <= epsilon is inconclusive and goes to the tie-break judge (Sec. 4.5, 5.2)."""
    effect: Literal["categorical", "graded"] = "categorical"
    """CMTE of the paper's categorical contributions (``categorical``), or ``graded``: a
    positive c_i times its probe's strength, the share of the memory's change in the
    treatment response that the context supports (``scoring.probe_strength``; no extra
    model call). Store iff CMTE > epsilon either way; the tie-break judge at zero."""
    graded_strength: Literal["grounded_count", "grounded_share"] = "grounded_count"
    """How ``graded`` measures a probe's strength (``scoring.probe_strength``)."""
    graded_half: float = Field(default=2.0, gt=0.0)
    """Grounded words at strength 0.5 for ``graded_strength="grounded_count"``."""
    decision_threshold: float = Field(default=0.0, ge=-1.5, le=1.5)
    """Store iff CMTE > this (paper: 0, with the tie-break judge at |CMTE| <= epsilon). A
    threshold chosen on a dev split (the headline's "tuned alike" rule): a zero CMTE is
    then decided by which side of the threshold it falls, with no tie-break call. Needs
    ``irrelevant_probe="always"`` (the probe skipping reasons about the sign of CMTE)."""
    seed: int = 42
    """Seed of the deterministic A/B order of the blind judge (Sec. 4.4)."""
    max_parse_attempts: int = Field(default=3, ge=1, le=10)
    """Attempts per model call until its output parses strictly (1 = no retry)."""
    retry_backoff_seconds: float = Field(default=0.0, ge=0.0, le=60.0)
    """Base of the exponential wait between attempts (0 = retry at once)."""
    max_regeneration_rounds: int = Field(default=2, ge=0, le=10)
    """Full-set regenerations that keep valid probes and redo invalid roles (App. B.2)."""
    max_targeted_repairs: int = Field(default=1, ge=0, le=10)
    """Rounds of single-role repair with the semantic audit (App. B.2 prompt)."""
    max_fresh_reconstructions: int = Field(default=1, ge=0, le=10)
    """Fresh three-probe reconstructions, the last resort of probe repair (App. B.2)."""
    max_concurrency: int = Field(default=8, ge=1, le=1024)
    """Model calls in flight at once within one decision."""
    tie_break: Literal["judge", "store", "do_not_store"] = "judge"
    """Who decides when |CMTE| <= epsilon: the tie-break judge (App. B.6), or a fixed
    default (``store`` / ``do_not_store``: the Table 3 ablations; no model call)."""
    irrelevant_probe: Literal["always", "if_open", "if_uncertain"] = "always"
    """``always`` (paper): evaluate all three probes together. ``if_open``: evaluate the
    relevant and risk probes first and skip the irrelevant probe when its contribution
    range cannot change the sign of CMTE (the decision is the one the full triplet gives
    on the same evidence). ``if_uncertain``: also skip it when the relevant probe was
    helpful and the risk probe showed no harm (the irrelevant probe could still have
    shown unnecessary use: not decision-preserving). A skipped probe saves 4 calls."""
    classify_reasons: bool = True
    """Run the post-hoc reason classifier on do-not-store decisions (App. B.7)."""
    use_structured_output: bool = True
    """Use the model's JSON-schema call when it offers one (``complete_json``)."""
    max_output_chars: int = Field(default=2000, ge=0)
    """Raw model output kept in an error record (truncated), for diagnosis."""
    max_candidate_chars: int = Field(default=DEFAULT_MAX_CANDIDATE_CHARS, ge=1)
    """Longest candidate accepted; a longer one is refused before any model call
    (``InvalidCandidateError``, reason ``too_long``; ``admission.validation``)."""
    max_context_chars: int = Field(default=DEFAULT_MAX_CONTEXT_CHARS, ge=1)
    """Longest historical context accepted (it goes into every prompt of a decision)."""
    on_known_harm: Literal["reject", "flag"] = "reject"
    """A candidate whose text the harm ledger verified harmful (same id, same or normalised
    text under any id; ``harm_index``): ``reject`` it with no model call, or ``flag`` it
    and let ConMem decide (``admission.known_harm``)."""
    on_near_duplicate_harm: Literal["reject", "flag"] = "flag"
    """A near-duplicate of a verified harmful memory (token-set Jaccard >= 0.8): ``flag``
    (ConMem decides; the decision carries ``known_harm``) or ``reject``."""

    @model_validator(mode="after")
    def _threshold_needs_every_probe(self) -> AdmissionConfig:
        if self.decision_threshold != 0.0 and self.irrelevant_probe != "always":
            raise ValueError(
                "decision_threshold != 0 needs irrelevant_probe='always' (probe skipping "
                "preserves the decision only around a threshold of 0)"
            )
        return self


def cheap_config(base: AdmissionConfig | None = None) -> AdmissionConfig:
    """The cheap preset: ``irrelevant_probe="if_uncertain"``, the tie-break judge kept.

    Skipping the irrelevant probe after a helpful relevant probe and a harmless risk probe
    saves 4 of the 14-15 calls of such a decision. The preset never rejects a candidate
    that the default configuration stores (same deterministic model): it skips only when
    the partial CMTE is already positive (then it stores), and otherwise decides on the
    default's evidence with the default's zero-score rule. A fixed zero-score decision is
    not part of it: ``tie_break="do_not_store"`` turns "the probes showed nothing" into a
    rejection and dropped safety-critical facts ("User is allergic to shellfish.") whose
    probes the stand-in could not show as helpful (docs, Admission: cost).

    Args:
        base: The configuration to derive it from (paper defaults when None).

    Returns:
        The cheap configuration.
    """
    base = base if base is not None else AdmissionConfig()
    return base.model_copy(
        update={"irrelevant_probe": "if_uncertain", "tie_break": CHEAP_TIE_BREAK}
    )


CHEAP_TIE_BREAK: Literal["judge", "store", "do_not_store"] = "judge"
"""The zero-score rule of :func:`cheap_config`: the default's tie-break judge (a fixed
``do_not_store`` rejects what the default would store)."""
