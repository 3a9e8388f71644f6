"""One method's result on one case, scored against the verified targets (Appendix D).

Definitions (F = verified targets, m = |F|, H^ = the method's flagged set before any
verification, D = what it deleted):

- hits: |{r_1..r_m} ∩ F| over the method's harm ranking (Eq. 47's numerator);
- complete / exact: F ⊆ H^ / H^ = F (the paper's "Exact H = M"), on the flagged set;
- deleted_complete / deleted_exact: the same on D;
- extra_background: |H^ minus F|; cleared_extra_background: |D minus F|;
- recovered: every fresh trial on M minus D answers correctly (Binary Task Recovery on
  trials no method saw); expected_recovery: its exact probability;
- evidence_correct: the returned context's evidence favours the reference outright (a
  measure that does not move with the reader's temperature; None where no world computes
  it);
- verified_recovery: every trial the method itself ran on M minus D passed its judge (None
  when it never evaluated that context): the in-run claim, reported separately;
- accuracy / accuracy_none: P(a fresh answer is correct) with D deleted / with nothing
  deleted; harm: max(0, accuracy_none - accuracy), the chance the method made a correct
  answer wrong;
- target_ranks: each target's 1-based rank in the harm ranking (None: not ranked).

Clean cases (F empty) have no hits, complete or exact (None); they count for recovery,
accuracy, harm, extra background and cost.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 47 and Appendix D.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from .cases import BenchCase
from .measure import ContextQuality
from .methods.base import MethodOutput

__all__ = ["CaseCost", "CaseOutcome", "score_case"]


class CaseCost(BaseModel):
    """What a method paid on one case."""

    model_config = ConfigDict(frozen=True)

    model_calls: int = 0
    """Agent plus judge calls, deduplicated as a user's cache would (what a user pays)."""
    agent_calls: int = 0
    """Agent (task model) calls."""
    judge_calls: int = 0
    """Judge calls."""
    evaluator_calls: int = 0
    """Evaluator calls (coalition x trial) before model-call deduplication."""
    coalitions: int = 0
    """Distinct coalitions evaluated."""
    wall_seconds: float = 0.0
    """Wall time of the method (the measurement excluded)."""
    prompt_tokens: int | None = None
    """Prompt tokens of those model calls (None when no real model ran)."""
    completion_tokens: int | None = None
    """Completion tokens of those model calls (None when no real model ran)."""


class CaseOutcome(BaseModel):
    """A method's decision on one case and what it achieved."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    """The case."""
    cluster: str
    """Conversation (outer bootstrap level)."""
    query_id: str
    """Query (inner bootstrap level)."""
    structure: str
    """direct / redundant / joint / clean / ..."""
    fault_type: str
    """Fault type, ``"none"`` when the case has none."""
    targets: list[str]
    """Verified harmful set F."""
    ranking: list[str]
    """The method's harm ranking."""
    flagged: list[str]
    """The method's harmful set H^, before any verification."""
    cleared: list[str]
    """What the method deleted."""
    hits: int
    """|top-m of the ranking ∩ F|."""
    complete: bool | None
    """F ⊆ H^ (None for a clean case)."""
    exact: bool | None
    """H^ = F (None for a clean case)."""
    deleted_complete: bool | None = None
    """F ⊆ D (None for a clean case)."""
    deleted_exact: bool | None = None
    """D = F (None for a clean case)."""
    extra_background: int
    """|H^ minus F|."""
    cleared_extra_background: int
    """|D minus F|."""
    recovered: bool
    """Every fresh (unseen) trial on the returned context answered correctly."""
    expected_recovery: float = 0.0
    """Exact probability of ``recovered``."""
    verified_recovery: bool | None = None
    """Every trial the method ran on its returned context passed its judge; None if it
    never evaluated that context."""
    evidence_correct: bool | None = None
    """The returned context's evidence favours the reference outright (None: not computed)."""
    accuracy: float = 0.0
    """P(correct answer) with the returned context."""
    accuracy_none: float = 0.0
    """P(correct answer) with the full context (no clearance)."""
    harm: float = 0.0
    """max(0, accuracy_none - accuracy)."""
    status: str = "complete"
    """``complete`` or ``unverified`` (the method abstained)."""
    target_ranks: list[int | None]
    """Rank of each target in the ranking, in target order."""
    evaluator_calls: int
    """Evaluator calls the method made on this case."""
    coalitions: int
    """Distinct coalitions the method evaluated on this case."""
    model_calls: int = 0
    """Agent plus judge calls (deduplicated)."""
    agent_calls: int = 0
    """Agent calls."""
    judge_calls: int = 0
    """Judge calls."""
    prompt_tokens: int | None = None
    """Prompt tokens of the model calls (None when no real model ran)."""
    completion_tokens: int | None = None
    """Completion tokens of the model calls (None when no real model ran)."""
    wall_seconds: float
    """Wall time of the method on this case (excluding the recovery measurement)."""
    details: dict = {}
    """The method's diagnostics."""

    @property
    def m(self) -> int:
        """The number of verified targets, |F|."""
        return len(self.targets)

    @property
    def gain(self) -> float:
        """Accuracy - accuracy_none."""
        return self.accuracy - self.accuracy_none


def score_case(
    case: BenchCase,
    output: MethodOutput,
    *,
    quality: ContextQuality,
    accuracy_none: float,
    cost: CaseCost,
    verified_recovery: bool | None = None,
) -> CaseOutcome:
    """Score one method output against the case's verified targets.

    Args:
        case: The benchmark case.
        output: What the method ranked, flagged and deleted.
        quality: What the kept context achieves on fresh trials.
        accuracy_none: The accuracy of the unchanged context (the no-clearance baseline).
        cost: The method's model calls, coalitions and time on the case.
        verified_recovery: Whether every trial the method itself ran on the kept context
            passed its judge (None when it ran none).

    Returns:
        The case's outcome (module docstring).
    """
    targets = list(case.targets)
    target_set = set(targets)
    flagged = set(output.flagged)
    deleted = set(output.cleared)
    m = len(targets)
    rank_of = {mid: r for r, mid in enumerate(output.ranking, start=1)}
    return CaseOutcome(
        case_id=case.case_id,
        cluster=case.cluster,
        query_id=case.query_id,
        structure=case.structure,
        fault_type=case.fault_type or "none",
        targets=targets,
        ranking=list(output.ranking),
        flagged=list(output.flagged),
        cleared=list(output.cleared),
        hits=len(set(output.ranking[:m]) & target_set),
        complete=(target_set <= flagged) if m else None,
        exact=(flagged == target_set) if m else None,
        deleted_complete=(target_set <= deleted) if m else None,
        deleted_exact=(deleted == target_set) if m else None,
        extra_background=len(flagged - target_set),
        cleared_extra_background=len(deleted - target_set),
        recovered=quality.recovered,
        expected_recovery=quality.expected_recovery,
        verified_recovery=verified_recovery,
        evidence_correct=quality.evidence_correct,
        accuracy=quality.accuracy,
        accuracy_none=accuracy_none,
        harm=max(0.0, accuracy_none - quality.accuracy),
        status=output.status,
        target_ranks=[rank_of.get(t) for t in targets],
        evaluator_calls=cost.evaluator_calls,
        coalitions=cost.coalitions,
        model_calls=cost.model_calls,
        agent_calls=cost.agent_calls,
        judge_calls=cost.judge_calls,
        prompt_tokens=cost.prompt_tokens,
        completion_tokens=cost.completion_tokens,
        wall_seconds=cost.wall_seconds,
        details=output.details,
    )
