"""What the ledger returns: immutable records of runs, memories, feedback and restores.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 18-19.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CandidateRecord",
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
    content_hash: str
    """SHA-256 of the memory's text at the time of the decision."""
    position: int
    """Index in the retrieval order."""
    text: str | None = None
    """The (redacted) text, only when the ledger stores texts."""
    loo_effect: float | None = None
    loo_label: str | None = None
    shapley: float | None = None
    shapley_interval: tuple[float, float] | None = None
    rank: int | None = None
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
    size: int
    memory_ids: list[str]
    value: float
    gain: float
    recovered: bool
    admissible: bool
    trials: int


class RunRecord(BaseModel):
    """One clearance decision (or skip) for one query."""

    model_config = _FROZEN

    run_id: str
    """The ledger's id of this decision (a UUID)."""
    namespace: str
    created_at: datetime
    """When it was recorded (UTC)."""
    query_id: str
    """Hash of the query text (``hashing.query_hash``)."""
    query_text: str | None = None
    """The (redacted) query, only when the ledger stores texts."""
    origin: str
    """``live`` (an integration), ``replay`` (a feedback replay), ``bench``, or your own."""
    mode: RunMode
    status: str
    """The report's status: complete, failed, unverified or skipped."""
    status_reason: str | None = None
    recovered: bool
    baseline_value: float | None = None
    final_value: float | None = None
    success_signal: SuccessSignal
    agent_model: str | None = None
    judge_model: str | None = None
    model_calls: int | None = None
    """Agent and judge model calls the decision cost (None when the caller did not say)."""
    evaluator_calls: int
    coalitions: int
    rounds: int
    wall_seconds: float
    cost: dict[str, Any] = Field(default_factory=dict)
    """The report's whole cost block."""
    estimator: str | None = None
    clearance_search: str | None = None
    harm_tolerance: float | None = None
    trace_run_id: str | None = None
    """The LangSmith / LlamaIndex run id of the query, when there is one."""
    trace_system: str | None = None
    trigger: str | None = None
    """The trigger policy that decided to run (or skip) clearance."""
    trigger_reason: str | None = None
    replay_of: str | None = None
    """For a replay: the run it replays."""
    feedback_id: str | None = None
    """For a replay: the feedback that asked for it."""
    extra: dict[str, Any] = Field(default_factory=dict)
    memories: list[MemoryRecord] = Field(default_factory=list)
    candidates: list[CandidateRecord] = Field(default_factory=list)

    @property
    def cleared_ids(self) -> list[str]:
        """Ids of the memories this run cleared, in retrieval order."""
        return [m.memory_id for m in self.memories if m.cleared]

    @property
    def memory_ids(self) -> list[str]:
        """Ids of every memory in the run's context, in retrieval order."""
        return [m.memory_id for m in self.memories]


class FeedbackRecord(BaseModel):
    """A person's (or an evaluator's) verdict on the answer of one recorded query."""

    model_config = _FROZEN

    feedback_id: str
    namespace: str
    created_at: datetime
    run_id: str
    """The run the feedback is about."""
    query_id: str
    correct: bool
    correction: str | None = None
    """The correct answer (redacted), when given."""
    memory_ids: list[str] = Field(default_factory=list)
    """Memories the feedback names (suspected harmful when ``correct`` is False; confirmed
    good, so restored, when True)."""
    source: str = "api"
    source_id: str | None = None
    """E.g. the LangSmith feedback id."""
    comment: str | None = None


class MemoryEvent(BaseModel):
    """A restore of a memory that was wrongly suppressed.

    The memory must not be cleared by ledger shortcuts nor proposed by review until new
    verified evidence.
    """

    model_config = _FROZEN

    namespace: str
    created_at: datetime
    memory_id: str
    event: Literal["restored"]
    reason: str | None = None
    actor: str | None = None
    feedback_id: str | None = None
    run_id: str | None = None


class MemoryObservation(BaseModel):
    """One appearance of a memory in a recorded decision."""

    model_config = _FROZEN

    run_id: str
    created_at: datetime
    query_id: str
    origin: str
    mode: str
    status: str
    recovered: bool
    success_signal: str
    memory: MemoryRecord


class MemoryHistory(BaseModel):
    """Everything the ledger knows about one memory, oldest first."""

    model_config = _FROZEN

    namespace: str
    memory_id: str
    observations: list[MemoryObservation]
    feedback: list[FeedbackRecord]
    events: list[MemoryEvent]

    @property
    def restored(self) -> bool:
        """Restored, with no verified clearance after the last restore."""
        if not self.events:
            return False
        last = self.events[-1].created_at
        return not any(
            o.created_at > last and o.memory.cleared and o.recovered and o.status == "complete"
            for o in self.observations
        )
