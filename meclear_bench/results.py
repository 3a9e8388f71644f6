"""``results.json``: metrics by method, structure and fault type, bootstrap CIs, paired deltas.

Schema (rates in [0, 1]; a metric is null when it has no denominator, e.g. recall over
clean cases only)::

    {"methods": {NAME: {"status": "ok", "overall": {...}, "by_structure": {S: {...}},
                        "by_fault_type": {F: {...}}, "ci": {METRIC: [lo, hi]},
                        "ci_by_structure": {S: {METRIC: [lo, hi]}}}
                 | {"status": "not_run" | "failed", "reason": str}},
     "paired": {COMPARATOR: {METRIC: {"delta", "ci", "wins", "losses"}}},
     "reference": NAME, "funnel": {...}, "n_cases": int, "simulated": true, ...}

``overall`` holds every metric of :data:`~.metrics.METRICS` (flagged-set and deleted-set
Complete / Exact, unseen-trial ``recovery``, ``expected_recovery``, in-run
``verified_recovery``, ``accuracy`` / ``accuracy_gain`` / ``harm_rate``, model calls,
agent and judge calls, evaluator calls, coalitions, wall time, ...) plus
target_rank_ecdf {"1","2","3"}, n_cases, n_fault_cases, n_targets. ``judge`` and
``temperature`` record the run's success signal and world temperature.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .bootstrap import ClusterBootstrap
from .metrics import metric_arrays, per_case_values, summarize
from .outcomes import CaseOutcome
from .runner import BenchRun

__all__ = ["CI_METRICS", "LOWER_IS_BETTER", "build_results", "reference_method"]

CI_METRICS = (
    "recall_at_m",
    "complete_recall",
    "exact_match",
    "deleted_exact",
    "recovery",
    "expected_recovery",
    "evidence_correct",
    "accuracy_gain",
    "harm_rate",
    "extra_background",
    "cleared_extra_background",
)
"""Metrics that get bootstrap intervals and paired comparisons (``accuracy_gain`` is itself
paired with no clearance: its interval is the paired cluster-bootstrap interval of
accuracy(method) - accuracy(none))."""

LOWER_IS_BETTER = frozenset({"extra_background", "cleared_extra_background", "harm_rate"})
"""Metrics where the reference wins a case by having the smaller value."""


def reference_method(run: BenchRun) -> str | None:
    """The method compared with all others: the settings' choice or the first ``meclear*``.

    Args:
        run: The run.

    Returns:
        The method's name, or None.
    """
    wanted = run.settings.reference_method
    if wanted is not None:
        return wanted if wanted in run.outcomes else None
    return next((name for name in run.outcomes if name.split(":")[0] == "meclear"), None)


def _groups(outcomes: Sequence[CaseOutcome], key: str) -> dict[str, list[CaseOutcome]]:
    groups: dict[str, list[CaseOutcome]] = {}
    for o in outcomes:
        groups.setdefault(getattr(o, key), []).append(o)
    return dict(sorted(groups.items()))


def _interval(boot: ClusterBootstrap, num: np.ndarray, den: np.ndarray, conf: float) -> Any:
    ci = boot.interval(num, den, conf)
    return None if ci is None else [ci[0], ci[1]]


def _method_block(
    outcomes: list[CaseOutcome], boot: ClusterBootstrap | None, conf: float
) -> dict[str, Any]:
    block: dict[str, Any] = {
        "status": "ok",
        "overall": summarize(outcomes),
        "by_structure": {s: summarize(g) for s, g in _groups(outcomes, "structure").items()},
        "by_fault_type": {f: summarize(g) for f, g in _groups(outcomes, "fault_type").items()},
        "ci": {},
        "ci_by_structure": {},
    }
    if boot is None:
        return block
    structures = np.array([o.structure for o in outcomes])
    for metric in CI_METRICS:
        num, den = metric_arrays(outcomes, metric)
        block["ci"][metric] = _interval(boot, num, den, conf)
        for s in block["by_structure"]:
            mask = structures == s
            block["ci_by_structure"].setdefault(s, {})[metric] = _interval(
                boot, num * mask, den * mask, conf
            )
    return block


def _paired(
    ref: list[CaseOutcome], other: list[CaseOutcome], boot: ClusterBootstrap | None, conf: float
) -> dict[str, Any]:
    paired: dict[str, Any] = {}
    for metric in CI_METRICS:
        num_a, den = metric_arrays(ref, metric)
        num_b, _ = metric_arrays(other, metric)
        diff = num_a - num_b  # per-case paired differences, before resampling
        total = den.sum()
        a, b = per_case_values(ref, metric), per_case_values(other, metric)
        both = np.isfinite(a) & np.isfinite(b)
        if metric in LOWER_IS_BETTER:
            a, b = -a, -b
        paired[metric] = {
            "delta": float(diff.sum() / total) if total > 0 else None,
            "ci": _interval(boot, diff, den, conf) if boot is not None else None,
            "wins": int(np.sum(a[both] > b[both])),
            "losses": int(np.sum(a[both] < b[both])),
        }
    return paired


def build_results(
    run: BenchRun,
    *,
    funnel: dict[str, Any] | None = None,
    skipped_lines: Sequence[dict[str, Any]] = (),
    source: str = "",
) -> dict[str, Any]:
    """The ``results.json`` document of a run.

    Args:
        run: The finished (or stopped) run.
        funnel: How the cases were built and verified (LoCoMo builds).
        skipped_lines: The bad lines of the case file, with their numbers.
        source: Where the cases came from.

    Returns:
        The JSON-ready results: metrics with bootstrap intervals per method, per structure
        and per group, costs and the run's labels.
    """
    s = run.settings
    first = next(iter(run.outcomes.values()), [])
    boot = None
    if s.bootstrap_replicates > 0 and first:
        boot = ClusterBootstrap(
            [o.cluster for o in first],
            [o.query_id for o in first],
            replicates=s.bootstrap_replicates,
            seed=s.seed,
        )
    methods: dict[str, Any] = {}
    for spec in s.methods:
        if spec in run.not_run:
            methods[spec] = {"status": "not_run", "reason": run.not_run[spec]}
        elif spec in run.failed:
            methods[spec] = {"status": "failed", "reason": run.failed[spec]}
        elif spec in run.outcomes:
            methods[spec] = _method_block(run.outcomes[spec], boot, s.confidence)
    ref = reference_method(run)
    paired = {
        name: _paired(run.outcomes[ref], outs, boot, s.confidence)
        for name, outs in run.outcomes.items()
        if ref is not None and name != ref
    }
    return {
        "simulated": True,
        "note": "Task values come from the simulated evidence world, not a real LLM.",
        "source": source,
        "n_cases": len(first),
        "reference": ref,
        "methods": methods,
        "paired": paired,
        "funnel": funnel or {},
        "skipped_lines": list(skipped_lines),
        "failures": [f.model_dump() for f in run.failures],
        "judge": str(s.judge),
        "temperature": s.temperature,
        "recovery_trials": s.recovery_trials,
        "settings": s.model_dump(mode="json"),
        "bootstrap": {
            "replicates": s.bootstrap_replicates,
            "confidence": s.confidence,
            "levels": ["cluster", "query"],
        },
        "wall_seconds": run.wall_seconds,
    }
