"""Baselines tuned alike: each baseline's threshold chosen on dev as ConMem's preset is.

ConMem's cost preset is chosen on the dev split by macro-F1 (``admission_locomo_run``);
the feature baselines ship with their papers' thresholds (A-MAC 0.55, A-MEM 0.5,
MemoryBank 0.5), which on this benchmark store nearly everything. :func:`tune_threshold`
gives each baseline the same chance: the threshold on its own score that maximises dev
macro-F1 (every midpoint between two distinct dev scores, plus store-all and reject-all;
ties go to the threshold closest to the published one). The test split is then decided by
re-thresholding the recorded test scores: no further model call.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from meclear_integrations.admission.labels import Decision
from meclear_integrations.admission.metrics import admission_metrics

__all__ = ["apply_threshold", "tune_threshold"]


def apply_threshold(scores: Sequence[float | None], threshold: float) -> list[Decision | None]:
    """Store when the score reaches ``threshold`` (None stays None: a failed extraction).

    Args:
        scores: One baseline score per candidate.
        threshold: The threshold.

    Returns:
        The decisions.
    """
    return [None if s is None else ("store" if s >= threshold else "do_not_store") for s in scores]


def tune_threshold(
    scores: Sequence[float | None], gold: Sequence[str], *, published: float
) -> tuple[float, float]:
    """The threshold that maximises macro-F1 on ``scores`` against ``gold``.

    Args:
        scores: The baseline's dev scores (None: failed).
        gold: The dev labels.
        published: The baseline's own threshold (ties break towards it).

    Returns:
        ``(threshold, dev macro-F1)``.
    """
    values = sorted({s for s in scores if s is not None})
    if not values:
        return published, 0.0
    options = [values[0] - 1e-9, values[-1] + 1e-9, published]
    options += [(a + b) / 2 for a, b in pairwise(values)]
    reasons = ["-"] * len(gold)
    best: tuple[float, float, float] | None = None  # (macro-F1, -distance, threshold)
    for t in options:
        f1 = admission_metrics(gold, apply_threshold(scores, t), reasons).macro_f1
        key = (round(f1, 12), -abs(t - published), t)
        if best is None or key > best:
            best = key
    assert best is not None
    return best[2], best[0]
