"""Settings of one benchmark run (methods, engine configuration, surrogate budgets, bootstrap)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core import ClearanceConfig
from ..simulation import EvidenceWorld, JudgeSignal

__all__ = ["DEFAULT_METHODS", "BenchSettings", "ClearanceMode", "case_world"]

ClearanceMode = Literal["paper", "verified", "direct"]

DEFAULT_METHODS: tuple[str, ...] = (
    "oracle",
    "meclear",
    "loo",
    "contextcite",
    "proxyspex",
    "llm-direct",
    "none",
)
"""Methods ``meclear bench`` runs when ``--methods`` is not given."""


class BenchSettings(BaseModel):
    """Everything that determines a benchmark run besides the cases."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    methods: tuple[str, ...] = DEFAULT_METHODS
    """Method specs in report order: ``name`` or ``name:preset`` (e.g. ``meclear:paper``)."""
    engine: ClearanceConfig = Field(default_factory=ClearanceConfig)
    """Engine configuration of the ``meclear`` method (its seed is mixed with each case id)."""
    trials: int = Field(default=2, ge=1, le=100)
    """T of the baselines: evaluator runs per coalition, v(S) their mean (as the engine)."""
    loo_tolerance: float = Field(default=0.05, ge=0.0, le=1.0)
    """kappa of the LOO baseline: a memory is flagged when d_i < -kappa (Eq. 7)."""
    harm_tolerance: float = Field(default=0.05, ge=0.0, le=1.0)
    """tau of the surrogate baselines: flagged when the surrogate effect is below -tau."""
    surrogate_budget: int = Field(default=32, ge=2, le=100_000)
    """B: random ablations of ContextCite and ProxySPEX."""
    keep_probability: float = Field(default=0.5, gt=0.0, lt=1.0)
    """Probability that a memory is kept in a random ablation."""
    lasso_alpha: float = Field(default=0.01, gt=0.0)
    """L1 penalty of the surrogates' Lasso on standardised features."""
    clearance: ClearanceMode = "paper"
    """What each method deletes. ``paper``: MeClear applies its verified rule (Eq. 17-20),
    the baselines delete their flagged set as is (the paper's Table 1). ``verified``: every
    method's flagged set goes through the same Eq. 17-20 rule along its own order.
    ``direct``: every method deletes its flagged set."""
    success_threshold: float = Field(default=1.0, gt=0.0, le=1.0)
    """A trial passes when the judge scores it at least this (the engine's recovery
    predicate)."""
    recovery_trials: int = Field(default=2, ge=1, le=100)
    """Fresh trials behind Binary Task Recovery: the agent answers the returned context
    on trials no method saw and every answer must be correct (exact match with the
    reference, whatever the judge); not charged to the method's cost."""
    judge: JudgeSignal = Field(default_factory=JudgeSignal)
    """The success signal every method's evaluator gets (``reference``, ``full:q``,
    ``noisy:e``, ``coalition``; :mod:`meclear_integrations.simulation.judging`)."""
    temperature: float | None = Field(default=None, ge=0.0)
    """Overrides every case world's temperature (None: each case's own)."""
    seed: int = 0
    """Seed of every sampler; each case mixes it with its case id."""
    bootstrap_replicates: int = Field(default=2000, ge=0, le=1_000_000)
    """Two-level cluster-bootstrap replicates (0 disables intervals)."""
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    """Coverage of the percentile intervals."""
    reference_method: str | None = None
    """The method compared pairwise with every other; None: the first ``meclear`` method."""


def case_world(world: EvidenceWorld, settings: BenchSettings) -> EvidenceWorld:
    """A case's world under the run's settings (temperature override)."""
    if settings.temperature is None or settings.temperature == world.temperature:
        return world
    return world.model_copy(update={"temperature": settings.temperature})
