"""Every method's tunable settings as chosen on the dev split (SIMULATED world).

Chosen by ``meclear bench-sweep tune --locomo DIR --k 5 --seed 0 --out OUT`` (dev split:
LoCoMo conversations 26, 30, 41; both standard settings; objective: mean unseen-trial
recovery, at most 0.05 deleted background memories per case, ties to fewer model calls;
the sweep starts from the package default). The benchmark uses them by default, so the
test-split figures are never tuned on test.
"""

from __future__ import annotations

from typing import Any

from ..core import AutoShapley, ClearanceConfig

__all__ = [
    "TUNED_CONTEXTCITE",
    "TUNED_LOO_TOLERANCE",
    "TUNED_MECLEAR",
    "TUNED_PROXYSPEX",
    "tuned_engine",
]

TUNED_MECLEAR: dict[str, Any] = {
    "estimator": AutoShapley(exact_budget=32),
    "harm_rule": "threshold",
    "harm_tolerance": 0.02,
    "recovery_rate": 0.3,
    "max_trials": 12,
}
"""MeClear: exact enumeration up to K = 5 (32 coalitions; tuned as ``estimator="exact"``
at K = 5; beyond, the package's automatic choice), Eq. 14 with tau = 0.02, the sequential
verification rule with recovery rate 0.3 and at most 12 trials."""
TUNED_LOO_TOLERANCE = 0.0
"""LOO: kappa = 0 (flag every negative leave-one-out effect)."""
TUNED_CONTEXTCITE: dict[str, Any] = {"tolerance": 0.1, "alpha": 0.001, "flag_rule": "tolerance"}
"""ContextCite: tau = 0.1, Lasso alpha = 0.001, flag w_i < -tau."""
TUNED_PROXYSPEX: dict[str, Any] = {"tolerance": 0.1, "alpha": 0.001, "flag_rule": "tolerance"}
"""ProxySPEX: tau = 0.1, Lasso alpha = 0.001, flag phi_i < -tau."""


def tuned_engine(**overrides: object) -> ClearanceConfig:
    """The engine configuration of the benchmark's ``meclear`` method."""
    return ClearanceConfig(**{**TUNED_MECLEAR, **overrides})
