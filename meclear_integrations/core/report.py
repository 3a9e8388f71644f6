"""The clearance report: every decision of one run, JSON round-trippable."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .config import ClearanceConfig
from .interactions import InteractionLabel
from .memory import Memory
from .screening import LooLabel

__all__ = [
    "ClearanceCandidate",
    "ClearanceCost",
    "ClearanceReport",
    "MemoryAttribution",
    "PairInteraction",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class MemoryAttribution(BaseModel):
    """Screening and attribution of one memory."""

    model_config = _FROZEN

    memory_id: str
    """Id of the memory."""
    position: int
    """Index in the frozen retrieval order."""
    loo_effect: float
    """d_i = v(M) - v(M minus m_i) (Eq. 7)."""
    loo_label: LooLabel
    """harmful (d_i < -kappa), inconclusive, or beneficial (d_i > kappa)."""
    shapley: float
    """psi_i, the estimated cooperative contribution (Eq. 3 / Eq. 11)."""
    shapley_interval: tuple[float, float]
    """Confidence interval of psi_i (Hoeffding, Eq. 13; a point for exact enumeration)."""
    rank: int
    """1 = most negative contribution (the priority order of Eq. 16 over all memories)."""
    harmful: bool
    """psi_i < -tau (Eq. 14)."""
    cleared: bool
    """Removed from the returned context."""


class PairInteraction(BaseModel):
    """omega_ij of one pair (Eq. 15) and its structural label."""

    model_config = _FROZEN

    memory_ids: tuple[str, str]
    omega: float
    label: InteractionLabel


class ClearanceCandidate(BaseModel):
    """One nested clearance candidate C_j (Eq. 17) and its verification (Eq. 18-19)."""

    model_config = _FROZEN

    size: int
    """j = |C_j| (0 is the unchanged context)."""
    memory_ids: list[str]
    """Ids cleared by the candidate, in priority order."""
    value: float
    """v^(M minus C_j)."""
    gain: float
    """g^(j) = v^(M minus C_j) - v^(M) (Eq. 18)."""
    recovered: bool
    """nu(M minus C_j) = 1: every trial passed the success threshold."""
    admissible: bool
    """j in J_t (Eq. 19): j = 0, or positive gain and recovered."""
    trials: int = Field(default=0, ge=0)
    """Evaluator trials behind ``value`` (T when verified; 1 for a candidate that adaptive
    trials ruled out on its first trial; 0 in reports written before this field)."""


class ClearanceCost(BaseModel):
    """What the run cost in evaluator work."""

    model_config = _FROZEN

    coalitions: int
    """Distinct coalitions evaluated."""
    evaluator_calls: int
    """Evaluator invocations (coalitions x trials)."""
    cache_hits: int
    """Coalition requests answered from the cache."""
    wall_seconds: float
    """Wall time of the run."""
    rounds: int = 0
    """Batches sent to the evaluator (model round trips of latency when each batch fits
    within ``max_concurrency``)."""


class ClearanceReport(BaseModel):
    """Result of one MeClear run over a frozen context."""

    model_config = _FROZEN

    baseline_value: float | None
    """v^(M); None for an empty context (nothing evaluated)."""
    final_value: float | None
    """v^ of the returned context (Theorem 2: >= baseline_value)."""
    recovered: bool
    """The returned context satisfies the recovery predicate nu."""
    kept: list[Memory]
    """Returned context, original order."""
    cleared: list[Memory]
    """Memories removed for this query (the bank is untouched), original order."""
    attributions: list[MemoryAttribution]
    """One per memory, retrieval order."""
    interactions: list[PairInteraction] = Field(default_factory=list)
    """Pairwise interactions when ``config.interactions`` is on."""
    candidates: list[ClearanceCandidate]
    """Every candidate tried, C_0 first."""
    cost: ClearanceCost
    """Distinct coalitions, evaluator calls, cache hits, rounds and wall time of the run."""
    config: ClearanceConfig
    """The configuration of the run."""
    estimator: str | None = None
    """Concrete estimator used (``exact``, ``kernel``, ``permutation``, ``bernstein``);
    None when attribution did not run (empty context or early exit)."""
    clearance_search: Literal["nested", "minimal"] = "nested"
    """Candidate family searched: nested (Eq. 17) or every subset of H^ (Eq. 5)."""
    early_exit: bool = False
    """The full context already satisfied the recovery predicate, so attribution was
    skipped: ``attributions`` is empty and nothing is cleared."""

    @property
    def cleared_ids(self) -> list[str]:
        return [m.id for m in self.cleared]

    @property
    def kept_ids(self) -> list[str]:
        return [m.id for m in self.kept]

    @property
    def harmful_ids(self) -> list[str]:
        return [a.memory_id for a in self.attributions if a.harmful]

    def attribution(self, memory_id: str) -> MemoryAttribution:
        """The attribution of ``memory_id`` (KeyError when absent)."""
        for a in self.attributions:
            if a.memory_id == memory_id:
                return a
        raise KeyError(memory_id)

    def to_table(self) -> str:
        """A readable text rendering of the report."""
        from .rendering import render_report

        return render_report(self)
