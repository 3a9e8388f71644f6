"""Paired cluster-bootstrap intervals for admission metrics (balanced accuracy, macro-F1).

Two methods' decisions on the same candidates are compared under the same replicate
weights of :class:`~.bootstrap.ClusterBootstrap` (conversations, then candidates in them;
CLARK-News pairs are their own clusters): per replicate the confusion counts of both
methods are re-weighted, their balanced accuracy and macro-F1 computed, and the
difference taken. A failed decision counts as wrong for both classes' recall and in no
class's predictions, as in :func:`~meclear_integrations.admission.metrics.admission_metrics`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from .bootstrap import ClusterBootstrap, percentile_interval

__all__ = ["PairedDelta", "cluster_of", "paired_deltas"]


class PairedDelta(BaseModel):
    """One metric's difference (method minus other) with its 95% interval, in points."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: str
    """``balanced_accuracy`` or ``macro_f1``."""
    delta: float
    """The difference on the sample."""
    lo: float | None
    """Lower end of the 95% percentile interval."""
    hi: float | None
    """Upper end."""

    @property
    def above_zero(self) -> bool:
        """Whether the whole interval is above 0."""
        return self.lo is not None and self.lo > 0


def cluster_of(candidate_id: str, source: str) -> str:
    """The resampling cluster: the conversation, or a CLARK-News (stale, current) pair.

    Args:
        candidate_id: The candidate's id.
        source: Its ``source`` (``locomo:<id>`` or ``clark_news``).

    Returns:
        The cluster key.
    """
    if source == "clark_news":
        return "clark:" + candidate_id.removesuffix(":para").rsplit(":", 1)[-1]
    return source


def _metrics(
    weights: np.ndarray, gold_store: np.ndarray, pred: Sequence[str | None]
) -> tuple[np.ndarray, np.ndarray]:
    ps = np.array([p == "store" for p in pred], dtype=float)
    pd = np.array([p == "do_not_store" for p in pred], dtype=float)
    gs = gold_store.astype(float)
    gd = 1.0 - gs
    n_s, n_d = weights @ gs, weights @ gd
    tp_s, tp_d = weights @ (gs * ps), weights @ (gd * pd)
    p_s, p_d = weights @ ps, weights @ pd
    with np.errstate(invalid="ignore", divide="ignore"):
        r_s = np.where(n_s > 0, tp_s / np.where(n_s > 0, n_s, 1), 0.0)
        r_d = np.where(n_d > 0, tp_d / np.where(n_d > 0, n_d, 1), 0.0)
        f_s = np.where(n_s + p_s > 0, 2 * tp_s / np.where(n_s + p_s > 0, n_s + p_s, 1), 0.0)
        f_d = np.where(n_d + p_d > 0, 2 * tp_d / np.where(n_d + p_d > 0, n_d + p_d, 1), 0.0)
    return (r_s + r_d) / 2, (f_s + f_d) / 2


def paired_deltas(
    gold: Sequence[str],
    method: Sequence[str | None],
    other: Sequence[str | None],
    clusters: Sequence[str],
    ids: Sequence[str],
    *,
    replicates: int = 2000,
    seed: int = 0,
) -> list[PairedDelta]:
    """``method`` minus ``other`` on balanced accuracy and macro-F1, in points, with intervals.

    Args:
        gold: The labels.
        method: The first method's decisions.
        other: The second method's decisions.
        clusters: Each candidate's cluster (:func:`cluster_of`).
        ids: Each candidate's id.
        replicates: Bootstrap replicates.
        seed: The resampling seed.

    Returns:
        One :class:`PairedDelta` per metric.
    """
    boot = ClusterBootstrap(clusters, ids, replicates=replicates, seed=seed)
    gold_store = np.array([g == "store" for g in gold])
    one = np.ones((1, len(gold)))
    out = []
    point_a, point_b = _metrics(one, gold_store, method), _metrics(one, gold_store, other)
    rep_a, rep_b = (
        _metrics(boot.weights, gold_store, method),
        _metrics(boot.weights, gold_store, other),
    )
    for k, name in enumerate(("balanced_accuracy", "macro_f1")):
        interval = percentile_interval(100 * (rep_a[k] - rep_b[k]))
        out.append(
            PairedDelta(
                metric=name,
                delta=float(100 * (point_a[k][0] - point_b[k][0])),
                lo=interval[0] if interval else None,
                hi=interval[1] if interval else None,
            )
        )
    return out
