"""Admission configuration with the ConMem paper's defaults (Sec. 4.5, Sec. 5.2)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .labels import ProbeRole

__all__ = ["AdmissionConfig", "CMTEWeights", "RoleWeights"]

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
    classify_reasons: bool = True
    """Run the post-hoc reason classifier on do-not-store decisions (App. B.7)."""
    use_structured_output: bool = True
    """Use the model's JSON-schema call when it offers one (``complete_json``)."""
    max_output_chars: int = Field(default=2000, ge=0)
    """Raw model output kept in an error record (truncated), for diagnosis."""
