"""Settings of one benchmark run.

Methods, engine configuration, trial policy, budgets, flagging rules, judge, bootstrap.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from meclear_integrations.core import ClearanceConfig
from meclear_integrations.simulation import EvidenceWorld, JudgeSignal

from .tuned import (
    TUNED_CONTEXTCITE,
    TUNED_LOO_TOLERANCE,
    TUNED_PROXYSPEX,
    TUNED_VERIFICATION,
)

__all__ = [
    "DEFAULT_METHODS",
    "RATED_DEFAULT",
    "BenchSettings",
    "ClearanceMode",
    "FlagRule",
    "SurrogateSettings",
    "case_world",
]

ClearanceMode = Literal["paper", "verified", "direct"]
FlagRule = Literal["tolerance", "relative"]

DEFAULT_METHODS: tuple[str, ...] = (
    "oracle",
    "meclear",
    "loo",
    "contextcite",
    "proxyspex",
    "none",
)
"""Methods ``meclear bench`` runs when ``--methods`` is not given: none needs a rater model,
so the defaults finish with the agent and judge alone. ``llm-direct`` (a chat model rates
each memory) joins them when ``--rater-model`` names its rater, or by ``--methods``."""
RATED_DEFAULT = "llm-direct"
"""The rated baseline added to the defaults when ``--rater-model`` is given."""


class SurrogateSettings(BaseModel):
    """The tunable settings of one surrogate baseline (ContextCite, ProxySPEX)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tolerance: float = Field(default=0.05, ge=0.0, le=1.0)
    """tau: a memory is flagged when its surrogate effect is below -tau."""
    alpha: float = Field(default=0.01, gt=0.0)
    """L1 penalty of the Lasso on standardised features."""
    flag_rule: FlagRule = "tolerance"
    """``tolerance``: w_i < -tau; ``relative``: also w_i <= min(w) / 2 (a negative weight at
    least half the most negative one)."""


class BenchSettings(BaseModel):
    """Everything that determines a benchmark run besides the cases."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    methods: tuple[str, ...] = DEFAULT_METHODS
    """Method specs in report order: ``name`` or ``name:preset`` (e.g. ``meclear:paper``)."""
    engine: ClearanceConfig = Field(default_factory=ClearanceConfig)
    """Engine configuration of the ``meclear`` method (its seed is mixed with each case
    id); by default the package default, ``ClearanceConfig()``, as a user gets it."""
    policy: ClearanceConfig | None = None
    """Trial policy of every baseline (T, adaptive trials, early exit, verification rule,
    success threshold); None: the ``meclear`` method's configuration, so every method
    gets the same policy (each baseline's own ``verification`` settings applied on top)."""
    verification: dict[str, dict[str, float | int]] = Field(
        default_factory=lambda: {k: dict(v) for k, v in TUNED_VERIFICATION.items()}
    )
    """Per baseline (``loo``, ``contextcite``, ``proxyspex``), its own verification settings
    (``recovery_rate``, ``max_trials``) over the trial policy, tuned on dev
    (:mod:`.tuned`); a baseline not named here verifies with the trial policy's."""
    loo_tolerance: float = Field(default=TUNED_LOO_TOLERANCE, ge=0.0, le=1.0)
    """kappa of the LOO baseline: a memory is flagged when d_i < -kappa (Eq. 7); tuned on
    dev by default."""
    contextcite: SurrogateSettings = Field(
        default_factory=lambda: SurrogateSettings(**TUNED_CONTEXTCITE)
    )
    """Tolerance, Lasso alpha and flagging rule of ContextCite (tuned on dev by default)."""
    proxyspex: SurrogateSettings = Field(
        default_factory=lambda: SurrogateSettings(**TUNED_PROXYSPEX)
    )
    """Tolerance, Lasso alpha and flagging rule of ProxySPEX (tuned on dev by default)."""
    match_budget: bool = True
    """Give each ablation baseline, per case, as many distinct ablation coalitions as the
    reference method (the first ``meclear*``) evaluated on that case; False (or no
    reference method): ``surrogate_budget``."""
    surrogate_budget: int = Field(default=32, ge=2, le=100_000)
    """B: distinct random ablations of ContextCite and ProxySPEX when budgets are not
    matched."""
    keep_probability: float = Field(default=0.5, gt=0.0, lt=1.0)
    """Probability that a memory is kept in a random ablation."""
    clearance: ClearanceMode = "verified"
    """What each method deletes. ``verified``: every method's flagged set goes through the
    same verified rule (Eq. 17-20, the engine's) along its own order. ``paper``: MeClear
    verifies, the baselines delete their flagged set as is (the paper's Table 1).
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

    def trial_policy(self, method: str | None = None) -> ClearanceConfig:
        """The baselines' trial policy (see ``policy``), with ``method``'s own verification.

        Args:
            method: The baseline's name (``name`` or ``name:preset``; None: the shared
                policy without per-method verification settings).

        Returns:
            The trial policy.
        """
        policy = self.policy if self.policy is not None else self.engine
        own = self.verification.get(method.partition(":")[0]) if method else None
        return policy.updated(verification=own) if own else policy


def case_world(world: EvidenceWorld, settings: BenchSettings) -> EvidenceWorld:
    """A case's world under the run's settings (temperature override).

    Args:
        world: The case's world.
        settings: The run's settings.

    Returns:
        The world.
    """
    if settings.temperature is None or settings.temperature == world.temperature:
        return world
    return world.model_copy(update={"temperature": settings.temperature})
