"""Every method tuned alike: a threshold (and feature weights) chosen on dev by macro-F1.

The feature baselines ship with their papers' thresholds (A-MAC 0.55, A-MEM 0.5,
MemoryBank 0.5), which on this benchmark store nearly everything, and ConMem stores at
CMTE > 0. :func:`tune_threshold` gives every method the same chance: the threshold on its
own score that maximises dev macro-F1 (every midpoint between two distinct dev scores,
plus store-all, reject-all and the published threshold; ties go to the threshold closest
to the published one). :func:`tune_weights` also chooses the feature weights on dev, as
A-MAC's own code does (a grid over the weight simplex, the best threshold per point),
and :func:`conmem_score` turns a ConMem decision into a score whose published threshold
(0) reproduces its decision. The test split is then decided by re-thresholding the
recorded test scores: no further model call.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

import numpy as np

from meclear_integrations.admission.labels import Decision

__all__ = [
    "TIE_NUDGE",
    "apply_threshold",
    "conmem_score",
    "simplex",
    "tune_threshold",
    "tune_weights",
]

TIE_NUDGE = 1e-3
"""ConMem's score at CMTE = 0: +TIE_NUDGE when the zero-score rule stored, else -TIE_NUDGE
(smaller than any non-zero CMTE: a mean of multiples of 0.25 over three probes)."""


def conmem_score(
    cmte: float | None, decision: Decision | None, epsilon: float = 1e-9
) -> float | None:
    """ConMem's decision as a score: CMTE, the tie-break's verdict at CMTE = 0.

    Thresholded at 0 it gives back ConMem's own decision (store at CMTE > 0, the
    tie-break at |CMTE| <= eps, reject below).

    Args:
        cmte: The decision's CMTE (None: no decision).
        decision: Its store / do-not-store.
        epsilon: The zero-score tolerance.

    Returns:
        The score, or None for a failed decision.
    """
    if cmte is None or decision is None:
        return None
    if abs(cmte) <= epsilon:
        return TIE_NUDGE if decision == "store" else -TIE_NUDGE
    return cmte


def apply_threshold(scores: Sequence[float | None], threshold: float) -> list[Decision | None]:
    """Store when the score reaches ``threshold`` (None stays None: a failed extraction).

    Args:
        scores: One score per candidate.
        threshold: The threshold.

    Returns:
        The decisions.
    """
    return [None if s is None else ("store" if s >= threshold else "do_not_store") for s in scores]


def _macro_f1_at(
    values: np.ndarray, store: np.ndarray, n_store: int, n_dns: int, thresholds: np.ndarray
) -> np.ndarray:
    """Macro-F1 of ``score >= t`` for every t (failed decisions count as wrong)."""
    s_sorted = np.sort(values[store])
    d_sorted = np.sort(values[~store])
    # predicted store = values >= t
    tp_s = len(s_sorted) - np.searchsorted(s_sorted, thresholds, side="left")
    fp_s = len(d_sorted) - np.searchsorted(d_sorted, thresholds, side="left")
    pred_s = tp_s + fp_s
    pred_d = len(values) - pred_s
    tp_d = len(d_sorted) - fp_s
    with np.errstate(invalid="ignore", divide="ignore"):
        f1_s = np.where(n_store + pred_s > 0, 2 * tp_s / np.maximum(n_store + pred_s, 1), 0.0)
        f1_d = np.where(n_dns + pred_d > 0, 2 * tp_d / np.maximum(n_dns + pred_d, 1), 0.0)
    return (f1_s + f1_d) / 2


def tune_threshold(
    scores: Sequence[float | None], gold: Sequence[str], *, published: float
) -> tuple[float, float]:
    """The threshold that maximises macro-F1 on ``scores`` against ``gold``.

    Args:
        scores: The method's dev scores (None: failed, always wrong).
        gold: The dev labels.
        published: The method's own threshold (ties break towards it).

    Returns:
        ``(threshold, dev macro-F1)``.
    """
    ok = [i for i, s in enumerate(scores) if s is not None]
    if not ok:
        return published, 0.0
    values = np.array([scores[i] for i in ok], dtype=float)
    store = np.array([gold[i] == "store" for i in ok])
    n_store = sum(1 for g in gold if g == "store")
    n_dns = len(gold) - n_store
    uniq = np.unique(values)
    options = np.concatenate(
        [[uniq[0] - 1e-9, uniq[-1] + 1e-9, published], (uniq[:-1] + uniq[1:]) / 2]
    )
    f1 = np.round(_macro_f1_at(values, store, n_store, n_dns, options), 12)
    best = np.flatnonzero(f1 == f1.max())
    pick = best[np.argmin(np.abs(options[best] - published))]
    return float(options[pick]), float(f1[pick])


def simplex(n: int, step: float) -> list[tuple[float, ...]]:
    """Every weight vector of ``n`` non-negative multiples of ``step`` summing to 1.

    Args:
        n: The number of weights.
        step: The grid step (1 / step an integer).

    Returns:
        The grid points.
    """
    k = round(1 / step)
    return [
        tuple(c / k for c in combo) for combo in product(range(k + 1), repeat=n) if sum(combo) == k
    ]


def tune_weights(
    features: Sequence[Sequence[float] | None],
    gold: Sequence[str],
    *,
    grid: Sequence[Sequence[float]],
    published: Sequence[float],
    published_threshold: float,
) -> tuple[tuple[float, ...], float, float]:
    """Feature weights and threshold that maximise dev macro-F1 (A-MAC's own procedure).

    Ties go to the weights closest to the published ones, then to the threshold closest
    to the published threshold.

    Args:
        features: Per dev candidate its feature vector (None: failed).
        gold: The dev labels.
        grid: The weight vectors to try (the published ones are added).
        published: The published weights.
        published_threshold: The published threshold.

    Returns:
        ``(weights, threshold, dev macro-F1)``.
    """
    best: tuple[float, float, tuple[float, ...], float] | None = None
    mat = [None if f is None else np.asarray(f, dtype=float) for f in features]
    for w in [tuple(published), *(tuple(g) for g in grid)]:
        wv = np.asarray(w, dtype=float)
        scores = [None if f is None else float(f @ wv) for f in mat]
        t, f1 = tune_threshold(scores, gold, published=published_threshold)
        dist = float(np.abs(wv - np.asarray(published, dtype=float)).sum())
        key = (round(f1, 12), -dist)
        if best is None or key > (best[0], best[1]):
            best = (key[0], key[1], w, t)
    assert best is not None
    return best[2], best[3], best[0]
