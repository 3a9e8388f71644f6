"""Bootstrap intervals of the admission bench (balanced accuracy, Macro-F1; ConMem - baseline).

Per method, and ConMem minus each baseline on the same cases (paired).

Cases are resampled with replacement (each admission candidate is its own unit); a replicate
is a vector of case counts, so every metric is a ratio of weighted sums and all methods share
the same draws (a paired difference uses one draw for both). Percentile intervals. A case a
method could not decide counts as a wrong decision, as in the point estimate.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from .bootstrap import percentile_interval

__all__ = ["MethodInterval", "PairedDifference", "case_weights", "interval", "metric_replicates"]

_CLASSES = ("store", "do_not_store")


class MethodInterval(BaseModel):
    """One method's metric with its bootstrap interval."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: str
    metric: str
    """``balanced_accuracy`` or ``macro_f1``."""
    value: float
    low: float | None
    high: float | None


class PairedDifference(BaseModel):
    """``reference - method`` on the cases both decided, with its bootstrap interval."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reference: str
    method: str
    metric: str
    n: int
    """Cases in the pair."""
    difference: float
    low: float | None
    high: float | None


def case_weights(n: int, replicates: int, seed: int) -> np.ndarray:
    """Case counts of ``replicates`` resamples of ``n`` cases (row 0 is the sample itself).

    Args:
        n: Number of cases.
        replicates: Bootstrap replicates.
        seed: Resampling seed.

    Returns:
        A ``(replicates + 1, n)`` array.
    """
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, np.full(n, 1.0 / n), size=replicates) if n else np.zeros((0, 0))
    return np.vstack([np.ones((1, n)), draws]).astype(float)


def metric_replicates(
    gold: Sequence[str], predicted: Sequence[str | None], weights: np.ndarray
) -> dict[str, np.ndarray]:
    """Balanced accuracy and Macro-F1 under every row of ``weights``.

    A class absent from a replicate's gold labels has recall 0 (as
    :func:`~meclear_integrations.admission.metrics.admission_metrics` scores it).

    Args:
        gold: Gold decisions.
        predicted: Predicted decisions (None: no decision, counted wrong).
        weights: ``(R, n)`` case counts.

    Returns:
        ``{"balanced_accuracy": (R,), "macro_f1": (R,)}``.
    """
    recalls, f1s = [], []
    for c in _CLASSES:
        g = np.array([x == c for x in gold], dtype=float)
        p = np.array([x == c for x in predicted], dtype=float)
        tp, pos, pred = weights @ (g * p), weights @ g, weights @ p
        recall = np.divide(tp, pos, out=np.zeros_like(tp), where=pos > 0)
        precision = np.divide(tp, pred, out=np.zeros_like(tp), where=pred > 0)
        s = recall + precision
        recalls.append(recall)
        f1s.append(np.divide(2 * recall * precision, s, out=np.zeros_like(s), where=s > 0))
    return {"balanced_accuracy": (recalls[0] + recalls[1]) / 2, "macro_f1": (f1s[0] + f1s[1]) / 2}


def interval(values: np.ndarray) -> tuple[float | None, float | None]:
    """The 95% percentile interval of the replicates (row 0, the sample, left out)."""
    found = percentile_interval(values[1:]) if len(values) > 1 else None
    return (None, None) if found is None else (float(found[0]), float(found[1]))
