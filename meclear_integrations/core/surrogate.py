"""A sparse linear surrogate of the coalition table: Lasso weights at no model call.

ContextCite (Cohen-Wang et al., 2024) fits v(S) ~ b + sum_i w_i [i in S] by Lasso on random
ablations and reads a negative w_i as harm. The coalition table the Shapley estimator
already evaluated (Eq. 3 or its sampled estimates, the screening and verification
contexts) is such a set of ablations: :func:`surrogate_weights` fits the same model on it,
one row per evaluated coalition (its mean score v^(S)), features standardised as the
benchmark's ContextCite does, so ``alpha`` means the same thing there. The fit reads only
the table: it makes no model call. :func:`lasso` is a plain coordinate-descent Lasso in
numpy (the engine's dependencies stay numpy, pydantic and tenacity).

The weights only *propose* candidates (``core.stages.sources.SurrogateSource``); every
candidate is verified by the run's rule (Eq. 18-19) and selected by Eq. 20, so a wrong
surrogate costs calls, never a clearance that does not verify.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 3, 18-20.
    Cohen-Wang et al. (2024), ContextCite: attributing model generation to context.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:
    from .lazy import np
from pydantic import ConfigDict, Field

from .game import CoalitionGame, membership_matrix
from .strict import StrictSettings

__all__ = ["SurrogateCandidates", "lasso", "surrogate_weights"]


class SurrogateCandidates(StrictSettings):
    """The surrogate candidate source's settings (``Verification.surrogate``).

    When no candidate of H^ (Eq. 17) is admissible, a Lasso surrogate is fitted on the
    coalition table already evaluated and the nested prefixes of the memories it weighs
    below ``-harm_tolerance`` (most harmful first) are verified like any candidate.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    alpha: float = Field(default=0.001, gt=0.0, le=1.0)
    """The Lasso penalty on standardised features (the benchmark's ContextCite uses the
    same objective; 0.001 is its value, chosen on the dev split for that baseline)."""
    max_size: int = Field(default=4, ge=1, le=64)
    """The longest prefix proposed: at most this many memories cleared by one candidate."""


def lasso(
    features: NDArray[np.float64],
    target: NDArray[np.float64],
    alpha: float,
    *,
    max_iter: int = 2000,
    tol: float = 1e-8,
) -> tuple[NDArray[np.float64], float]:
    """Lasso by cyclic coordinate descent, with an unpenalised intercept.

    Minimises ``(1 / 2n) ||y - b - X w||^2 + alpha ||w||_1`` (scikit-learn's ``Lasso``
    objective).

    Args:
        features: X, n rows by p columns.
        target: y, n values.
        alpha: the L1 penalty (>= 0).
        max_iter: most sweeps over the coordinates.
        tol: stop when no coefficient moved more than this in a sweep.

    Returns:
        (w, b): the coefficients and the intercept.

    Raises:
        ValueError: shapes that do not match, or a negative ``alpha``.
    """
    if alpha < 0.0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(target, dtype=np.float64)
    if x.ndim != 2 or y.ndim != 1 or x.shape[0] != y.shape[0]:
        raise ValueError(f"features {x.shape} and target {y.shape} do not match")
    n, p = x.shape
    w = np.zeros(p)
    if n == 0:
        return w, 0.0
    x_mean, y_mean = x.mean(axis=0), float(y.mean())
    xc, residual = x - x_mean, y - y_mean
    scale = (xc * xc).sum(axis=0) / n
    for _ in range(max_iter):
        moved = 0.0
        for j in range(p):
            if scale[j] <= 0.0:
                continue
            column = xc[:, j]
            rho = float(column @ residual) / n + scale[j] * w[j]
            new = float(np.sign(rho)) * max(abs(rho) - alpha, 0.0) / scale[j]
            if new != w[j]:
                residual -= (new - w[j]) * column
                moved = max(moved, abs(new - w[j]))
                w[j] = new
        if moved <= tol:
            break
    return w, y_mean - float(x_mean @ w)


def surrogate_weights(game: CoalitionGame, alpha: float) -> NDArray[np.float64]:
    """The Lasso surrogate's weights w_i on the 0/1 scale, from the table alone.

    One row per evaluated coalition (its mean score), features standardised; a memory
    present in every row or in none gets weight 0. No model call.

    Args:
        game: the coalition table.
        alpha: the Lasso penalty on standardised features.

    Returns:
        K weights: the change of v^ when the memory is present (negative: harmful);
        zeros when the table has fewer than two rows or a constant value.
    """
    k = game.k
    rows = [(c, s) for c, s in game.scores.items() if s]
    weights = np.zeros(k)
    if len(rows) < 2:
        return weights
    x = membership_matrix([c for c, _ in rows], k).astype(np.float64)
    y = np.array([sum(s) / len(s) for _, s in rows], dtype=np.float64)
    std = x.std(axis=0)
    live = std > 1e-12
    if not live.any() or float(np.ptp(y)) < 1e-12:
        return weights
    scaled = (x[:, live] - x[:, live].mean(axis=0)) / std[live]
    w, _ = lasso(scaled, y, alpha)
    weights[live] = w / std[live]
    return weights
