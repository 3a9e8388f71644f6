"""Engine configuration with the MeClear paper's defaults."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ClearanceConfig", "EstimatorName"]

EstimatorName = Literal["permutation", "exact"]


class ClearanceConfig(BaseModel):
    """Settings of one MeClear run (paper defaults: L=16, T=2, kappa=tau=0.05)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    permutations: int = Field(default=16, ge=1, le=100_000)
    """L: permutations sampled by the permutation estimator (Eq. 11)."""
    trials: int = Field(default=2, ge=1, le=100)
    """T: evaluator runs per coalition; v(S) is their mean."""
    loo_tolerance: float = Field(default=0.05, ge=0.0, le=1.0)
    """kappa: |d_i| <= kappa is locally inconclusive (Eq. 7 screening)."""
    harm_tolerance: float = Field(default=0.05, ge=0.0, le=1.0)
    """tau: a memory is harmful when its contribution is below -tau (Eq. 14)."""
    estimator: EstimatorName = "permutation"
    """``"permutation"`` (Eq. 11) or ``"exact"`` enumeration (Eq. 3)."""
    interactions: bool = False
    """Also estimate pairwise interactions omega_ij (Eq. 15); diagnostic only."""
    success_threshold: float = Field(default=1.0, gt=0.0, le=1.0)
    """Recovery predicate nu: a context recovers when every trial scores >= this."""
    confidence_delta: float = Field(default=0.05, gt=0.0, lt=1.0)
    """delta of the Hoeffding interval reported per memory (Eq. 13)."""
    max_concurrency: int = Field(default=8, ge=1, le=1024)
    """Evaluator calls in flight at once."""
    max_exact_memories: int = Field(default=14, ge=1, le=20)
    """Largest K the exact estimator enumerates (2^K coalitions)."""
    seed: int | None = 0
    """Seed of the permutation sampler; None draws fresh randomness."""
