"""One method's result on one case, scored against the verified targets (Appendix D).

Definitions (F = verified targets, m = |F|, H^ = the method's flagged set):

- hits: |{r_1..r_m} ∩ F| over the method's harm ranking (Eq. 47's numerator);
- complete: F ⊆ H^; exact: H^ = F (the paper's "Exact H = M");
- extra_background: |H^ \\ F|; cleared_extra_background: |cleared \\ F|;
- recovered: every post-clearance trial on M minus cleared succeeds (Binary Task Recovery);
- target_ranks: each target's 1-based rank in the harm ranking (None: not ranked).

Clean cases (F empty) have no hits, complete or exact (None); they count for recovery,
extra background, cost and wall time.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from .cases import BenchCase
from .methods.base import MethodOutput

__all__ = ["CaseOutcome", "score_case"]


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
    """The method's harmful set H^."""
    cleared: list[str]
    """What the method deleted."""
    hits: int
    """|top-m of the ranking ∩ F|."""
    complete: bool | None
    """F ⊆ H^ (None for a clean case)."""
    exact: bool | None
    """H^ = F (None for a clean case)."""
    extra_background: int
    """|H^ minus F|."""
    cleared_extra_background: int
    """|cleared minus F|."""
    recovered: bool
    """Every post-clearance trial succeeded."""
    target_ranks: list[int | None]
    """Rank of each target in the ranking, in target order."""
    evaluator_calls: int
    """Evaluator calls the method made on this case."""
    coalitions: int
    """Distinct coalitions the method evaluated on this case."""
    wall_seconds: float
    """Wall time of the method on this case (excluding the recovery measurement)."""
    details: dict = {}
    """The method's diagnostics."""

    @property
    def m(self) -> int:
        return len(self.targets)


def score_case(
    case: BenchCase,
    output: MethodOutput,
    *,
    recovered: bool,
    evaluator_calls: int,
    coalitions: int,
    wall_seconds: float,
) -> CaseOutcome:
    """Score one method output against the case's verified targets."""
    targets = list(case.targets)
    target_set = set(targets)
    flagged = set(output.flagged)
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
        extra_background=len(flagged - target_set),
        cleared_extra_background=len(set(output.cleared) - target_set),
        recovered=recovered,
        target_ranks=[rank_of.get(t) for t in targets],
        evaluator_calls=evaluator_calls,
        coalitions=coalitions,
        wall_seconds=wall_seconds,
        details=output.details,
    )
