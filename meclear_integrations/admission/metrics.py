"""Admission metrics of the ConMem paper (Sec. 5.3).

Accuracy, balanced accuracy, macro-F1, per-class recall and per-reason recall. A failed
decision (None) counts as wrong for its case.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from ..core.errors import ConfigurationError

__all__ = ["AdmissionMetrics", "ReasonRecall", "admission_metrics", "roc_auc"]

CLASSES = ("store", "do_not_store")


class ReasonRecall(BaseModel):
    """Decision recall within one gold reason type."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int
    """Cases with this reason type."""
    correct: int
    """Cases whose decision matches the gold label."""
    recall: float
    """correct / n."""


class AdmissionMetrics(BaseModel):
    """Classification metrics over one method's decisions."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int
    """Cases."""
    errors: int
    """Cases without a decision (a stage failed)."""
    accuracy: float
    """Correct decisions / n."""
    balanced_accuracy: float
    """Mean of the two per-class recalls."""
    macro_f1: float
    """Mean of the store and do-not-store F1."""
    recall: dict[str, float]
    """Per-class recall (store, do_not_store)."""
    precision: dict[str, float]
    """Per-class precision."""
    f1: dict[str, float]
    """Per-class F1."""
    per_reason: dict[str, ReasonRecall]
    """Decision recall per gold reason type."""


def _ratio(a: int, b: int) -> float:
    return a / b if b else 0.0


def admission_metrics(
    gold: Sequence[str], predicted: Sequence[str | None], reasons: Sequence[str]
) -> AdmissionMetrics:
    """Metrics of ``predicted`` against ``gold`` (``None`` = no decision).

    Args:
        gold: The gold decisions.
        predicted: The predicted decisions.
        reasons: The gold reason type of each case.

    Returns:
        Accuracy, balanced accuracy, macro-F1, per-class and per-reason recall.

    Raises:
        ConfigurationError: The sequences differ in length.
    """
    if not (len(gold) == len(predicted) == len(reasons)):
        raise ConfigurationError("gold, predicted and reasons must have the same length")
    n = len(gold)
    recall, precision, f1 = {}, {}, {}
    for c in CLASSES:
        tp = sum(1 for g, p in zip(gold, predicted, strict=True) if g == c and p == c)
        recall[c] = _ratio(tp, sum(1 for g in gold if g == c))
        precision[c] = _ratio(tp, sum(1 for p in predicted if p == c))
        pr = precision[c] + recall[c]
        f1[c] = 2 * precision[c] * recall[c] / pr if pr else 0.0
    by_reason: dict[str, list[bool]] = defaultdict(list)
    for g, p, r in zip(gold, predicted, reasons, strict=True):
        by_reason[r].append(g == p)
    return AdmissionMetrics(
        n=n,
        errors=sum(1 for p in predicted if p is None),
        accuracy=_ratio(sum(1 for g, p in zip(gold, predicted, strict=True) if g == p), n),
        balanced_accuracy=sum(recall.values()) / len(CLASSES),
        macro_f1=sum(f1.values()) / len(CLASSES),
        recall=recall,
        precision=precision,
        f1=f1,
        per_reason={
            r: ReasonRecall(n=len(v), correct=sum(v), recall=_ratio(sum(v), len(v)))
            for r, v in sorted(by_reason.items())
        },
    )


def roc_auc(
    scores: Sequence[float | None], gold: Sequence[str], positive: str = "store"
) -> float | None:
    """Area under the ROC curve of ``scores`` for ``positive`` against the other labels.

    The probability that a random positive case scores above a random negative one, ties
    counting one half (the Mann-Whitney U over n_pos * n_neg): 1 ranks every positive
    first, 0.5 is chance. Rank-based, O(n log n). A case with no score (None) is left out.

    Args:
        scores: One score per case (higher = more likely ``positive``).
        gold: The gold labels.
        positive: The positive label.

    Returns:
        The AUC, or None when either class has no scored case.

    Raises:
        ConfigurationError: The sequences differ in length or a score is not finite.

    Example:
        >>> from meclear_integrations.admission.metrics import roc_auc
        >>> roc_auc([0.9, 0.4, 0.4, 0.1], ["store", "store", "do_not_store", "do_not_store"])
        0.875
    """
    if len(scores) != len(gold):
        raise ConfigurationError("scores and gold must have the same length")
    pairs = [(float(s), g == positive) for s, g in zip(scores, gold, strict=True) if s is not None]
    if any(s != s or s in (float("inf"), float("-inf")) for s, _ in pairs):
        raise ConfigurationError("roc_auc: scores must be finite")
    n_pos = sum(1 for _, p in pairs if p)
    n_neg = len(pairs) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    pairs.sort(key=lambda x: x[0])
    rank_sum = 0.0  # sum of the positives' mid-ranks (1-based)
    i = 0
    while i < len(pairs):
        j = i
        while j < len(pairs) and pairs[j][0] == pairs[i][0]:
            j += 1
        mid = (i + 1 + j) / 2
        rank_sum += mid * sum(1 for _, p in pairs[i:j] if p)
        i = j
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
