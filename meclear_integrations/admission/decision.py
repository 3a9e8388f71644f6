"""The admission decision: every stage's evidence for one candidate, JSON round-trippable."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .config import AdmissionConfig
from .errors import AdmissionError
from .known_harm import KnownHarm
from .labels import (
    AttributionLabel,
    Decision,
    Effect,
    JudgePreference,
    Preference,
    ProbeRole,
    ReasonType,
)

__all__ = [
    "AdmissionCost",
    "AdmissionDecision",
    "AdmissionFailedError",
    "AttributionAudit",
    "CallFailure",
    "JudgeVerdict",
    "ProbeCheck",
    "ProbeEvaluation",
    "ProbeRound",
    "ReasonClassification",
    "StageError",
    "TieBreak",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")

Stage = Literal[
    "probe_generation",
    "probe_validation",
    "probe_repair",
    "responses",
    "judge",
    "audit",
    "tie_break",
    "reason",
    "features",
]


class CallFailure(BaseModel):
    """One model call that never produced a strictly parsable output."""

    model_config = _FROZEN

    stage: Stage
    """Stage of the call."""
    role: ProbeRole | None = None
    """Probe role the call served, if any."""
    attempts: int
    """Attempts made (the bound is ``max_parse_attempts``)."""
    error: str
    """Last parse or model error."""
    last_output: str | None = None
    """Last raw output (truncated to ``max_output_chars``), None if the model raised."""
    transient: bool = False
    """The last attempt raised a transient provider error (outage, rate limit, timeout):
    a background decision backs off and runs again instead of failing."""


class StageError(BaseModel):
    """A stage that failed: the decision carries this instead of a guessed label."""

    model_config = _FROZEN

    stage: Stage
    """The stage that failed."""
    message: str
    """What went wrong, in one line."""
    failures: list[CallFailure] = Field(default_factory=list)
    """The calls that failed (empty when the stage failed on validation, not parsing)."""


class ProbeCheck(BaseModel):
    """The probe auditor's verdict on one role (App. B.2)."""

    model_config = _FROZEN

    valid: bool
    """Whether the probe fulfils its role without leakage."""
    issue: str = ""
    """The semantic audit of an invalid probe."""


class ProbeRound(BaseModel):
    """One generation, regeneration, targeted repair or fresh reconstruction round."""

    model_config = _FROZEN

    kind: Literal["generate", "regenerate", "targeted_repair", "fresh"]
    """Which step of the repair ladder (App. B.2)."""
    probes: dict[str, str]
    """Role -> query after this round."""
    checks: dict[str, ProbeCheck] = Field(default_factory=dict)
    """Role -> validation verdict of this round (empty when validation did not run)."""
    error: str | None = None
    """Why the round produced nothing usable (a generation call failed), if it did not."""


class JudgeVerdict(BaseModel):
    """The blind pairwise quality judge on one probe (Sec. 4.4, App. B.4)."""

    model_config = _FROZEN

    treatment_position: Literal["A", "B"]
    """Where the treatment response was shown (deterministically randomised)."""
    raw_preference: JudgePreference
    """The judge's answer in presentation positions."""
    preference: Preference
    """The answer un-mapped to the conditions."""
    explanation: str
    """The judge's concise explanation."""


class AttributionAudit(BaseModel):
    """The attribution auditor on one probe (Sec. 4.4, App. B.5)."""

    model_config = _FROZEN

    memory_used: bool
    """Whether the candidate memory was substantively used."""
    materially_changed: bool
    """Whether it materially changed the treatment response."""
    label: AttributionLabel
    """P_i in {utility, unnecessary, neutral, risk}."""
    explanation: str
    """The auditor's explanation."""

    @property
    def attributed(self) -> bool:
        """Used and materially changed: the precondition of any non-zero contribution."""
        return self.memory_used and self.materially_changed


class ProbeEvaluation(BaseModel):
    """One probe: its query, both counterfactual responses, the two evaluations, c_i."""

    model_config = _FROZEN

    role: ProbeRole
    """Relevant, irrelevant or risk."""
    query: str
    """The validated future query q_i."""
    control_response: str | None = None
    """R_i^0 = f(q_i), without the memory."""
    treatment_response: str | None = None
    """R_i^1 = f(q_i, M), with the memory."""
    judge: JudgeVerdict | None = None
    """Blind quality judgement (None when the stage failed)."""
    audit: AttributionAudit | None = None
    """Attribution audit (None when the stage failed)."""
    effect: Effect | None = None
    """E_i: neutral unless attributed; then helpful/harmful/neutral by the judge."""
    contribution: float | None = None
    """Signed c_i of Sec. 4.5."""


class TieBreak(BaseModel):
    """The parameter-independent tie-break judge (App. B.6)."""

    model_config = _FROZEN

    decision: Decision
    """STORE or DO_NOT_STORE from the raw evidence."""
    explanation: str
    """The judge's reason."""


class ReasonClassification(BaseModel):
    """Post-hoc reason type (App. B.7); never changes the decision or the score."""

    model_config = _FROZEN

    reason_type: ReasonType | None
    """``directly_relevant`` for store; a rejection reason; None when classification failed."""
    source: Literal["rule", "classifier"]
    """``rule`` for store decisions, ``classifier`` for the model call."""
    confidence: float | None = None
    """The classifier's confidence in [0, 1]."""
    explanation: str = ""
    """The classifier's short explanation."""
    error: StageError | None = None
    """Set when the classifier failed; the decision stands."""


class AdmissionCost(BaseModel):
    """Model calls and time of one decision (App. C counts)."""

    model_config = _FROZEN

    model_calls: int
    """Every model invocation, retries included (14 on the standard path, +1 tie-break)."""
    failed_attempts: int
    """Attempts whose output did not parse or whose call raised."""
    calls_by_stage: dict[str, int]
    """Model invocations per stage."""
    latency_seconds: float
    """Sum of the latencies of every model invocation."""
    wall_seconds: float
    """Elapsed time of the whole decision (concurrent calls overlap)."""


class AdmissionDecision(BaseModel):
    """ConMem's decision on one candidate memory, with all its counterfactual evidence."""

    model_config = _FROZEN

    candidate: str
    """The candidate memory M."""
    candidate_id: str | None = None
    """Caller's id of the candidate, if any."""
    decision: Decision | None
    """store / do_not_store; None when a stage failed (see ``error``)."""
    cmte: float | None = None
    """CMTE(M) = (1/K) sum_i c_i, K = 3 (Sec. 4.5)."""
    score: float | None = None
    """CMTE rescaled to [0, 1] by the configured bounds; 0.5 at CMTE = 0."""
    probes: list[ProbeEvaluation] = Field(default_factory=list)
    """The validated probe triplet and its evidence, in role order."""
    probe_rounds: list[ProbeRound] = Field(default_factory=list)
    """The probe generation and repair log."""
    tie_break: TieBreak | None = None
    """The tie-break judge's verdict when |CMTE| <= epsilon, else None."""
    explanation: str = ""
    """The admission explanation handed to the reason classifier."""
    reason: ReasonClassification | None = None
    """The post-hoc reason type (None when not run)."""
    error: StageError | None = None
    """The stage that failed, if any: then ``decision`` is None."""
    cost: AdmissionCost
    """Model calls and time."""
    config: AdmissionConfig
    """The configuration used."""
    known_harm: KnownHarm | None = None
    """The harm ledger verified this text (or a near-duplicate) harmful before: the match,
    the harmful memory, the evidence run and whether it was rejected or flagged."""

    @property
    def ok(self) -> bool:
        """True when a decision was reached."""
        return self.decision is not None

    @property
    def store(self) -> bool:
        """True only for a reached ``store`` decision."""
        return self.decision == "store"

    @property
    def tie_break_ran(self) -> bool:
        """Whether the tie-break judge decided."""
        return self.tie_break is not None

    def summary(self) -> dict[str, object]:
        """A compact, JSON-safe summary (for metadata and events; no response texts).

        Returns:
            The decision, CMTE, score, probe labels, reason, tie-break and error.
        """
        return {
            "decision": self.decision,
            "cmte": self.cmte,
            "score": self.score,
            "tie_break": self.tie_break.decision if self.tie_break else None,
            "reason_type": self.reason.reason_type if self.reason else None,
            "contributions": {p.role: p.contribution for p in self.probes},
            "labels": {p.role: p.audit.label if p.audit else None for p in self.probes},
            "error": self.error.stage if self.error else None,
            "model_calls": self.cost.model_calls,
            "known_harm": self.known_harm.model_dump() if self.known_harm else None,
        }


class AdmissionFailedError(AdmissionError):
    """A decision could not be reached and the caller's policy is to raise.

    ``decision`` holds the partial evidence and the :class:`StageError`.

    Args:
        decision: The failed decision.
    """

    def __init__(self, decision: AdmissionDecision) -> None:
        err = decision.error
        where = f"{err.stage}: {err.message}" if err else "unknown stage"
        super().__init__(f"admission failed for candidate {decision.candidate_id!r} ({where})")
        self.decision = decision
