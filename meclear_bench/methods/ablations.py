"""Random ablations and the standardised Lasso shared by the surrogate baselines.

B distinct ablations, each keeping every memory independently with probability p
(ContextCite's sampling) and drawn without replacement (a repeated coalition would cost
nothing new and tell nothing new; at most 2^K); the target is the [0, 1] task value
v^(S) (one trial under adaptive trials, as the engine's attribution coalitions), not a
log-probability. The Lasso is fitted on standardised features and its coefficients are
mapped back to the 0/1 scale, so a weight is the surrogate's change of task value when the
feature switches on.
"""

from __future__ import annotations

import numpy as np

from ..oracle import CaseOracle

__all__ = ["distinct_masks", "fit_standardised_lasso", "sample_ablations"]


def distinct_masks(
    k: int, budget: int, keep_probability: float, rng: np.random.Generator
) -> np.ndarray:
    """min(budget, 2^K) distinct random masks (rows), in draw order.

    Args:
        k: The number of memories.
        budget: The number of masks wanted.
        keep_probability: The chance that a memory is kept.
        rng: The random generator.

    Returns:
        The masks, shape (B, K), as 0/1.
    """
    wanted = min(budget, 1 << k) if k < 62 else budget
    seen: set[bytes] = set()
    rows: list[np.ndarray] = []
    while len(rows) < wanted:
        for row in rng.random((max(8, wanted), k)) < keep_probability:
            key = np.packbits(row).tobytes()
            if key not in seen:
                seen.add(key)
                rows.append(row)
                if len(rows) == wanted:
                    break
    return np.array(rows, dtype=bool).reshape(len(rows), k)


def sample_ablations(
    oracle: CaseOracle, budget: int, keep_probability: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """B distinct random masks (B, K) as 0/1 floats and their task values (B,).

    Args:
        oracle: The case's task values.
        budget: The number of ablations.
        keep_probability: The chance that a memory is kept.
        rng: The random generator.

    Returns:
        (masks, values).
    """
    masks = distinct_masks(oracle.k, budget, keep_probability, rng)
    values = np.array([oracle.value(np.flatnonzero(row).tolist()) for row in masks])
    return masks.astype(float), values


def fit_standardised_lasso(features: np.ndarray, target: np.ndarray, alpha: float) -> np.ndarray:
    """Lasso on standardised features; coefficients on the original 0/1 scale.

    A constant feature (always or never present in the sample) gets weight 0.

    Args:
        features: The design matrix.
        target: The task values.
        alpha: The Lasso penalty.

    Returns:
        The coefficients.
    """
    try:
        from sklearn.linear_model import Lasso
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the contextcite / proxyspex baselines need scikit-learn: "
            'pip install "meclear-integrations[bench]"'
        ) from exc
    mean = features.mean(axis=0)
    std = features.std(axis=0)
    live = std > 1e-12
    weights = np.zeros(features.shape[1])
    if not live.any() or np.ptp(target) < 1e-12:
        return weights
    scaled = (features[:, live] - mean[live]) / std[live]
    model = Lasso(alpha=alpha, max_iter=10_000).fit(scaled, target)
    weights[live] = model.coef_ / std[live]
    return weights
