"""The paper's metrics (Appendix D) as ratios of per-case sums, so the bootstrap can reuse them.

Every metric is sum(numerator) / sum(denominator) over cases:

- ``recall_at_m``: hits / m (target-micro Recall@|M|, Eq. 47);
- ``complete_recall``, ``exact_match``: on the flagged set, over fault cases (clean cases
  have denominator 0); ``deleted_complete``, ``deleted_exact``: the same on what was deleted;
- ``recovery`` (fresh trials no method saw), ``expected_recovery`` (its exact probability),
  ``extra_background``, ``cleared_extra_background``: over all cases;
- ``evidence_correct``: share of cases whose returned context's evidence favours the
  reference outright (over the cases where the world computes it);
- ``verified_recovery``: the method's in-run claim, over the cases where it evaluated the
  context it returned;
- ``accuracy``, ``accuracy_none``, ``accuracy_gain`` (accuracy minus accuracy_none, paired
  with no clearance), ``harm_rate`` (mean of max(0, accuracy_none - accuracy)),
  ``unverified_rate`` (share of cases where the method abstained);
- ``model_calls_per_case`` (agent + judge, deduplicated), ``agent_calls_per_case``,
  ``judge_calls_per_case``, ``evaluator_calls_per_case``, ``coalitions_per_case``,
  ``wall_seconds_per_case``: means; ``prompt_tokens_per_case``,
  ``completion_tokens_per_case``: means over the cases a real model ran (None otherwise);
- ``rank_ecdf@k``: targets ranked within k / all targets (the target-rank ECDF).

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 47 and Appendix D.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .outcomes import CaseOutcome

__all__ = [
    "ECDF_RANKS",
    "METRICS",
    "RATE_METRICS",
    "metric_arrays",
    "metric_value",
    "per_case_values",
    "rank_ecdf_curve",
    "summarize",
]

ECDF_RANKS = (1, 2, 3)

_Pair = Callable[[CaseOutcome], tuple[float, float]]


def _ecdf(k: int) -> _Pair:
    return lambda o: (sum(1 for r in o.target_ranks if r is not None and r <= k), o.m)


METRICS: dict[str, _Pair] = {
    "recall_at_m": lambda o: (o.hits, o.m),
    "complete_recall": lambda o: (float(bool(o.complete)), float(o.m > 0)),
    "exact_match": lambda o: (float(bool(o.exact)), float(o.m > 0)),
    "deleted_complete": lambda o: (float(bool(o.deleted_complete)), float(o.m > 0)),
    "deleted_exact": lambda o: (float(bool(o.deleted_exact)), float(o.m > 0)),
    "recovery": lambda o: (float(o.recovered), 1.0),
    "expected_recovery": lambda o: (o.expected_recovery, 1.0),
    "evidence_correct": lambda o: (
        float(bool(o.evidence_correct)),
        float(o.evidence_correct is not None),
    ),
    "verified_recovery": lambda o: (
        float(bool(o.verified_recovery)),
        float(o.verified_recovery is not None),
    ),
    "accuracy": lambda o: (o.accuracy, 1.0),
    "accuracy_none": lambda o: (o.accuracy_none, 1.0),
    "accuracy_gain": lambda o: (o.gain, 1.0),
    "harm_rate": lambda o: (o.harm, 1.0),
    "unverified_rate": lambda o: (float(o.status == "unverified"), 1.0),
    "extra_background": lambda o: (o.extra_background, 1.0),
    "cleared_extra_background": lambda o: (o.cleared_extra_background, 1.0),
    "model_calls_per_case": lambda o: (o.model_calls, 1.0),
    "agent_calls_per_case": lambda o: (o.agent_calls, 1.0),
    "judge_calls_per_case": lambda o: (o.judge_calls, 1.0),
    "prompt_tokens_per_case": lambda o: (o.prompt_tokens or 0, float(o.prompt_tokens is not None)),
    "completion_tokens_per_case": lambda o: (
        o.completion_tokens or 0,
        float(o.completion_tokens is not None),
    ),
    "evaluator_calls_per_case": lambda o: (o.evaluator_calls, 1.0),
    "coalitions_per_case": lambda o: (o.coalitions, 1.0),
    "wall_seconds_per_case": lambda o: (o.wall_seconds, 1.0),
    **{f"rank_ecdf@{k}": _ecdf(k) for k in ECDF_RANKS},
}
"""Metric name -> per-case (numerator, denominator)."""

RATE_METRICS = (
    "recall_at_m",
    "complete_recall",
    "exact_match",
    "deleted_exact",
    "recovery",
    "expected_recovery",
    "evidence_correct",
)
"""The headline rates (in [0, 1])."""


def metric_arrays(outcomes: Sequence[CaseOutcome], metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-case numerators and denominators of ``metric``.

    Args:
        outcomes: The outcomes of one method.
        metric: A metric name.

    Returns:
        (numerators, denominators).
    """
    pairs = [METRICS[metric](o) for o in outcomes]
    if not pairs:
        return np.zeros(0), np.zeros(0)
    num, den = zip(*pairs, strict=True)
    return np.asarray(num, dtype=float), np.asarray(den, dtype=float)


def metric_value(outcomes: Sequence[CaseOutcome], metric: str) -> float | None:
    """sum(num) / sum(den) of ``metric`` over ``outcomes``.

    Args:
        outcomes: The outcomes of one method.
        metric: A metric name (module docstring).

    Returns:
        The ratio; None when the denominator is 0 (e.g. recall over clean cases).
    """
    num, den = metric_arrays(outcomes, metric)
    total = den.sum()
    return float(num.sum() / total) if total > 0 else None


def per_case_values(outcomes: Sequence[CaseOutcome], metric: str) -> np.ndarray:
    """Num / den per case (NaN where den = 0): the case-level values behind wins and losses.

    Args:
        outcomes: The outcomes of one method.
        metric: A metric name.

    Returns:
        The values.
    """
    num, den = metric_arrays(outcomes, metric)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def summarize(outcomes: Sequence[CaseOutcome]) -> dict[str, object]:
    """Every metric over ``outcomes``, plus case and target counts.

    Args:
        outcomes: The outcomes of one method.

    Returns:
        Metric name -> value, with ``n_cases`` and ``n_targets``.
    """
    summary: dict[str, object] = {}
    for name in METRICS:
        if name.startswith("rank_ecdf@"):
            continue
        summary[name] = metric_value(outcomes, name)
    summary["target_rank_ecdf"] = {
        str(k): metric_value(outcomes, f"rank_ecdf@{k}") for k in ECDF_RANKS
    }
    summary["n_cases"] = len(outcomes)
    summary["n_fault_cases"] = sum(1 for o in outcomes if o.m > 0)
    summary["n_targets"] = sum(o.m for o in outcomes)
    return summary


def rank_ecdf_curve(outcomes: Sequence[CaseOutcome], max_rank: int | None = None) -> list[float]:
    """Share of all targets ranked within k, for k = 1..max_rank (default: largest K seen).

    Args:
        outcomes: The outcomes of one method.
        max_rank: The largest k.

    Returns:
        The curve.
    """
    ranks = [r for o in outcomes for r in o.target_ranks]
    if not ranks:
        return []
    top = max_rank or max(len(o.ranking) for o in outcomes) or 1
    top = max(top, max((r for r in ranks if r is not None), default=1))
    return [
        sum(1 for r in ranks if r is not None and r <= k) / len(ranks) for k in range(1, top + 1)
    ]
