"""What the ledger returns: immutable records of runs, memories, feedback and restores.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 7, 11, 16, 18-19.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "CandidateRecord",
    "FeedbackAuthority",
    "FeedbackRecord",
    "MemoryEvent",
    "MemoryHistory",
    "MemoryObservation",
    "MemoryRecord",
    "RunMode",
    "RunRecord",
    "SuccessSignal",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")

FeedbackAuthority = Literal["end_user", "reviewer", "operator"]
"""Who gave a feedback (``FeedbackRecord.authority``)."""
FEEDBACK_AUTHORITIES: tuple[str, ...] = ("end_user", "reviewer", "operator")

RunMode = Literal[
    "full",
    "ledger_guided",
    "feedback_guided",
    "early_exit",
    "skipped",
    "failed",
    "unverified",
    "empty",
]
"""How a decision was reached: ``full`` (Algorithm 1), ``ledger_guided`` (the ledger's prior
candidate was verified and is the clearance), ``feedback_guided`` (the memories a feedback
named were verified and are the clearance), ``early_exit`` (the full context already
passed), ``skipped`` (a trigger declined clearance: no model call), ``failed`` (fail-open),
``unverified`` (inconsistent verdicts), ``empty`` (nothing retrieved)."""
SuccessSignal = Literal["reference", "judge", "feedback", "none"]
"""What decided success: a reference answer, a live (reference-free) judge, a person's
correction (a feedback replay), or nothing (a skip)."""


class MemoryRecord(BaseModel):
    """One memory of a recorded decision's context."""

    model_config = _FROZEN

    memory_id: str
    """The memory's id in your store."""
    content_hash: str
    """SHA-256 of the memory's text at the time of the decision."""
    position: int
    """Index in the retrieval order."""
    text: str | None = None
    """The (redacted) text, only when the ledger stores texts."""
    loo_effect: float | None = None
    """d_i = v(M) - v(M minus m_i) (Eq. 7), when screening ran."""
    loo_label: str | None = None
    """``harmful``, ``inconclusive`` or ``beneficial`` (LOO screening, Eq. 7)."""
    shapley: float | None = None
    """The Shapley contribution psi_i (Eq. 11), when attribution ran."""
    shapley_interval: tuple[float, float] | None = None
    """The confidence interval of ``shapley``."""
    rank: int | None = None
    """1 = most negative contribution (the priority order of Eq. 16)."""
    harmful: bool = False
    """Verified or estimated harmful (H^, or cleared by a verified clearance)."""
    cleared: bool = False
    """Removed from the context the decision returned."""
    offered_as_prior: bool = False
    """Offered to the engine as a prior candidate (see ``core.prior``)."""


class CandidateRecord(BaseModel):
    """One verified candidate of a decision (Eq. 18-19)."""

    model_config = _FROZEN

    position: int
    """The candidate's index among the decision's candidates."""
    size: int
    """The number of memories it clears."""
    memory_ids: list[str]
    """The memories it clears."""
    value: float
    """v(M minus C_j), measured on the candidate's trials."""
    gain: float
    """g(j) = v(M minus C_j) - v(M) (Eq. 18)."""
    recovered: bool
    """Every trial of the kept context passed the success threshold."""
    admissible: bool
    """j in J_t (Eq. 19): the unchanged context, or positive gain and recovered."""
    trials: int
    """The trials the verification ran."""


class RunRecord(BaseModel):
    """One clearance decision (or skip) for one query."""

    model_config = _FROZEN

    run_id: str
    """The ledger's id of this decision (a UUID)."""
    namespace: str
    """The store or application the decision belongs to."""
    created_at: datetime
    """When it was recorded (UTC)."""
    query_id: str
    """Hash of the query text (``runtime.hashing.query_hash``)."""
    query_text: str | None = None
    """The (redacted) query, only when the ledger stores texts."""
    origin: str
    """``live`` (an integration), ``replay`` (a feedback replay), ``bench``, or your own."""
    mode: RunMode
    """How the decision was reached (:data:`RunMode`)."""
    status: str
    """The report's status: complete, failed, unverified or skipped."""
    status_reason: str | None = None
    """Why the run is unverified or skipped, when it is."""
    recovered: bool
    """The returned context passed the success test."""
    baseline_value: float | None = None
    """v(M) of the full context (None when nothing was evaluated)."""
    final_value: float | None = None
    """The value of the returned context."""
    success_signal: SuccessSignal
    """What decided success (:data:`SuccessSignal`)."""
    agent_model: str | None = None
    """The agent model's label, when the caller gave it."""
    judge_model: str | None = None
    """The judge model's label, when the caller gave it."""
    model_calls: int | None = None
    """Agent and judge model calls the decision cost (None when the caller did not say)."""
    evaluator_calls: int
    """Evaluator calls the engine made."""
    coalitions: int
    """Distinct coalitions evaluated."""
    rounds: int
    """Batches sent to the evaluator (model round trips of latency)."""
    wall_seconds: float
    """The clearance's wall time."""
    cost: dict[str, Any] = Field(default_factory=dict)
    """The report's whole cost block."""
    estimator: str | None = None
    """The attribution estimator used."""
    clearance_search: str | None = None
    """How the clearance candidates were searched."""
    harm_tolerance: float | None = None
    """tau of the run's configuration."""
    trace_run_id: str | None = None
    """The LangSmith / LlamaIndex run id of the query, when there is one."""
    trace_system: str | None = None
    """``langsmith``, ``llama_index`` or your own label of ``trace_run_id``."""
    trigger: str | None = None
    """The trigger policy that decided to run (or skip) clearance."""
    trigger_reason: str | None = None
    """The trigger policy's reason code."""
    replay_of: str | None = None
    """For a replay: the run it replays."""
    feedback_id: str | None = None
    """For a replay: the feedback that asked for it."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Further JSON-ready fields the caller gave (redacted)."""
    memories: list[MemoryRecord] = Field(default_factory=list)
    """Every memory of the context, in retrieval order."""
    candidates: list[CandidateRecord] = Field(default_factory=list)
    """The verified candidates, in the order they were tried."""

    @property
    def cleared_ids(self) -> list[str]:
        """Ids of the memories this run cleared, in retrieval order."""
        return [m.memory_id for m in self.memories if m.cleared]

    @property
    def memory_ids(self) -> list[str]:
        """Ids of every memory in the run's context, in retrieval order."""
        return [m.memory_id for m in self.memories]

    @property
    def carriers(self) -> list[dict[str, Any]]:
        """The carriers of the run's verified harm with their evidence (``extra["carriers"]``).

        Kept memories that alone gave the failing answer (``core.stages.carriers``): id,
        position, the answer alone, the harmful answer, score, trials, withheld.
        """
        found = self.extra.get("carriers")
        return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []

    @property
    def carrier_ids(self) -> list[str]:
        """Ids of the run's carriers, in retrieval order."""
        return [str(c.get("memory_id")) for c in self.carriers]


class FeedbackRecord(BaseModel):
    """A person's (or an evaluator's) verdict on the answer of one recorded query."""

    model_config = _FROZEN

    feedback_id: str
    """The ledger's id of the feedback (a UUID)."""
    namespace: str
    """The store or application it belongs to."""
    created_at: datetime
    """When it was recorded (UTC)."""
    run_id: str
    """The run the feedback is about."""
    query_id: str
    """The query's id."""
    correct: bool
    """Whether the answer was right."""
    correction: str | None = None
    """The correct answer (redacted), when given."""
    memory_ids: list[str] = Field(default_factory=list)
    """Memories the feedback names (suspected harmful when ``correct`` is False; claimed good
    when True: restored only if the feedback was trusted or a verification replay showed
    the answer right with them)."""
    source: str = "api"
    """Where the verdict came from (``api``, ``cli``, ``langsmith``...)."""
    source_id: str | None = None
    """E.g. the LangSmith feedback id."""
    comment: str | None = None
    """Free text (redacted)."""
    authority: FeedbackAuthority = "end_user"
    """Who gave it: ``end_user`` (the default; never settles a harm for other users by
    itself: its replay is history, and the harm is shared only once a verified run of the
    loop supports it), ``reviewer`` or ``operator`` (trusted: their replay is verified
    against their correction and shared, their positive feedback restores). Feedback
    recorded before schema version 6 reads as ``end_user``."""

    @field_validator("authority", mode="before")
    @classmethod
    def _legacy_authority(cls, value: Any) -> Any:
        return "end_user" if value is None else value


class MemoryEvent(BaseModel):
    """A restore of a memory that was wrongly suppressed (or a settlement's verdict).

    A restored memory must not be cleared by ledger shortcuts nor proposed by review until new
    verified evidence.
    """

    model_config = _FROZEN

    namespace: str
    """The store or application it belongs to."""
    created_at: datetime
    """When it was recorded (UTC)."""
    memory_id: str
    """The memory's id in your store."""
    event: Literal["restored", "lifted", "upheld", "checked", "reinstated"]
    """``restored``, or a settlement's re-verification verdict for one question
    (``lifted``, ``upheld``, ``checked``) or its reinstatement (``ledger.settlement``)."""
    reason: str | None = None
    """Why it was restored."""
    actor: str | None = None
    """Who restored it."""
    feedback_id: str | None = None
    """The feedback that asked for it, if any."""
    run_id: str | None = None
    """The run whose clearance it undoes, if any."""


class MemoryObservation(BaseModel):
    """One appearance of a memory in a recorded decision."""

    model_config = _FROZEN

    run_id: str
    """The run the memory appeared in."""
    created_at: datetime
    """When the run was recorded (UTC)."""
    query_id: str
    """The run's query."""
    origin: str
    """The run's origin."""
    mode: str
    """The run's mode."""
    status: str
    """The run's status."""
    recovered: bool
    """The run's returned context passed the success test."""
    success_signal: str
    """What decided the run's success."""
    memory: MemoryRecord
    """The memory as recorded in that run."""


class MemoryHistory(BaseModel):
    """Everything the ledger knows about one memory, oldest first."""

    model_config = _FROZEN

    namespace: str
    """The store or application."""
    memory_id: str
    """The memory's id in your store."""
    observations: list[MemoryObservation]
    """Its appearances in recorded runs."""
    feedback: list[FeedbackRecord]
    """The feedback that named it."""
    events: list[MemoryEvent]
    """Its restores."""

    @property
    def restored(self) -> bool:
        """Restored, with no verified clearance after the last restore.

        Only ``restored`` events count: a settlement's verdicts (``lifted`` ...) concern one
        question's settlement, not the memory everywhere.
        """
        restores = [e for e in self.events if e.event == "restored"]
        if not restores:
            return False
        last = restores[-1].created_at
        return not any(
            o.created_at > last and o.memory.cleared and o.recovered and o.status == "complete"
            for o in self.observations
        )
