"""What a benchmark method is given and what it returns."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from meclear_integrations.core.errors import MeClearError

from ..cases import BenchCase
from ..counting import CountingEvaluator
from ..oracle import CaseOracle
from ..settings import BenchSettings

__all__ = ["BenchMethod", "MethodContext", "MethodNotRunError", "MethodOutput", "case_seed"]


class MethodNotRunError(MeClearError, RuntimeError):
    """The method cannot run in this environment (e.g. it needs a real chat model)."""


def case_seed(seed: int, case_id: str, salt: str = "") -> int:
    """A per-case seed: the run seed mixed with the case id (independent draws per case).

    Args:
        seed: The run's seed.
        case_id: The case's id.
        salt: Separates the draws of different methods.

    Returns:
        The seed.
    """
    digest = hashlib.sha256(f"{seed}\x1f{case_id}\x1f{salt}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


@dataclass
class MethodContext:
    """One case as a method sees it: the frozen context and the counted evaluator."""

    case: BenchCase
    """The benchmark case."""
    evaluate: CountingEvaluator
    """The counted evaluator the method's calls are charged to."""
    settings: BenchSettings
    """The run's settings."""
    matched_coalitions: int | None = None
    """Distinct coalitions the reference method evaluated on this case (budget matching)."""
    method: str | None = None
    """The method's name: its own verification settings apply (``BenchSettings.verification``)."""
    simulated: bool = True
    """Task values come from the simulated evidence world (methods that read the world,
    such as ``newest`` and the simulated ``llm-filter``, run only then)."""

    def oracle(self) -> CaseOracle:
        """A value oracle under the run's trial policy, charged to ``evaluate``."""
        return CaseOracle(
            self.case.context(), self.evaluate, config=self.settings.trial_policy(self.method)
        )

    def ablation_budget(self) -> int:
        """B: the matched budget when there is one, else ``surrogate_budget``."""
        s = self.settings
        if s.match_budget and self.matched_coalitions is not None:
            return max(2, self.matched_coalitions)
        return s.surrogate_budget


class MethodOutput(BaseModel):
    """A method's decision on one case."""

    model_config = ConfigDict(frozen=True)

    scores: dict[str, float]
    """The method's raw per-memory score (units documented per method)."""
    ranking: list[str]
    """Memories with evidence of harm, most harmful first (Recall@|M| reads its top m)."""
    flagged: list[str]
    """The method's harmful set H^ in removal-priority order (Complete / Exact / extra)."""
    cleared: list[str]
    """What the method deletes from this query's context."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Method-specific diagnostics (JSON-serialisable)."""
    status: str = "complete"
    """``complete``, or ``unverified`` when the method abstained (inconsistent verdicts) and
    returned the context unchanged."""
    status_reason: str | None = None
    """Why the method abstained."""


class BenchMethod(ABC):
    """A clearance method compared on the frozen contexts of the benchmark."""

    name: str
    """Label in results (``meclear``, ``loo``, ...)."""
    verifies_in_paper: bool = False
    """The paper applies the verified clearance rule (Eq. 17-20) to this method."""

    @abstractmethod
    def run(self, ctx: MethodContext) -> MethodOutput:
        """Score, flag and clear one case.

        Args:
            ctx: The case, the run's settings and the evaluator the method charges its calls to.

        Returns:
            The method's scores, harm ranking, flagged and cleared memories.
        """
