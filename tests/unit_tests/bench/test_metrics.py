"""Metric functions on hand-computed cases (Appendix D definitions)."""

from __future__ import annotations

import pytest

from meclear_bench.measure import ContextQuality
from meclear_bench.methods import MethodOutput, harm_ranking
from meclear_bench.metrics import metric_value, rank_ecdf_curve, summarize
from meclear_bench.outcomes import CaseCost, score_case

from .cases_fixture import clean_case, direct_case, redundant_case


def outcome(case, ranking, flagged, cleared, recovered=True, calls=0, coalitions=0, accuracy=None):
    out = MethodOutput(scores={}, ranking=ranking, flagged=flagged, cleared=cleared)
    acc = (1.0 if recovered else 0.0) if accuracy is None else accuracy
    quality = ContextQuality(recovered=recovered, expected_recovery=acc**2, accuracy=acc)
    cost = CaseCost(evaluator_calls=calls, coalitions=coalitions, model_calls=coalitions + 1)
    return score_case(case, out, quality=quality, accuracy_none=0.5, cost=cost)


def test_score_case_by_hand() -> None:
    o = outcome(redundant_case(), ["f1", "b0", "f2"], ["f1", "b0"], ["f1"], recovered=False)
    assert o.hits == 1  # top-|M| = {f1, b0}
    assert o.complete is False and o.exact is False
    assert o.extra_background == 1 and o.cleared_extra_background == 0
    assert o.target_ranks == [1, 3]
    assert o.fault_type == "precise_temporal"


def test_exact_and_complete() -> None:
    exact = outcome(redundant_case(), ["f2", "f1"], ["f2", "f1"], ["f2", "f1"])
    assert (exact.hits, exact.complete, exact.exact, exact.extra_background) == (2, True, True, 0)
    over = outcome(redundant_case(), ["f2", "f1", "g"], ["f2", "f1", "g"], ["f2", "f1"])
    assert (over.complete, over.exact, over.extra_background) == (True, False, 1)


def test_recall_is_target_micro_and_clean_cases_only_count_for_recovery() -> None:
    outs = [
        outcome(direct_case(), ["f1"], ["f1"], ["f1"], recovered=True, calls=10, coalitions=5),
        outcome(redundant_case(), ["f1"], ["f1"], ["f1"], recovered=False, calls=20, coalitions=9),
        outcome(clean_case(), ["b0"], ["b0"], ["b0"], recovered=True, calls=0, coalitions=1),
    ]
    # micro: (1 + 1) / (1 + 2) targets, not the case-macro (1 + 0.5) / 2
    assert metric_value(outs, "recall_at_m") == pytest.approx(2 / 3)
    assert metric_value(outs, "complete_recall") == pytest.approx(1 / 2)
    assert metric_value(outs, "exact_match") == pytest.approx(1 / 2)
    assert metric_value(outs, "recovery") == pytest.approx(2 / 3)
    assert metric_value(outs, "extra_background") == pytest.approx(1 / 3)
    assert metric_value(outs, "evaluator_calls_per_case") == pytest.approx(10)
    assert metric_value(outs, "coalitions_per_case") == pytest.approx(5)
    s = summarize(outs)
    assert (s["n_cases"], s["n_fault_cases"], s["n_targets"]) == (3, 2, 3)
    # f1 (direct) and f1 (redundant) at rank 1; f2 never ranked
    assert s["target_rank_ecdf"] == {k: pytest.approx(2 / 3) for k in ("1", "2", "3")}


def test_deleted_set_accuracy_gain_and_harm() -> None:
    partial = outcome(redundant_case(), ["f1", "f2"], ["f1", "f2"], ["f1"], accuracy=0.25)
    assert (partial.exact, partial.deleted_exact, partial.deleted_complete) == (True, False, False)
    assert partial.harm == pytest.approx(0.25) and partial.gain == pytest.approx(-0.25)
    full = outcome(redundant_case(), ["f1", "f2"], ["f1", "f2"], ["f2", "f1"], accuracy=0.9)
    assert full.deleted_exact and full.harm == 0.0
    outs = [partial, full]
    assert metric_value(outs, "accuracy_gain") == pytest.approx((-0.25 + 0.4) / 2)
    assert metric_value(outs, "harm_rate") == pytest.approx(0.125)
    assert metric_value(outs, "deleted_exact") == pytest.approx(0.5)
    assert metric_value(outs, "expected_recovery") == pytest.approx((0.0625 + 0.81) / 2)
    assert metric_value(outs, "model_calls_per_case") == pytest.approx(1.0)
    assert metric_value(outs, "verified_recovery") is None  # no in-run verdicts recorded


def test_recall_is_none_without_targets() -> None:
    outs = [outcome(clean_case(), [], [], [])]
    assert metric_value(outs, "recall_at_m") is None
    assert metric_value(outs, "complete_recall") is None
    assert metric_value(outs, "recovery") == 1.0


def test_rank_ecdf_curve() -> None:
    outs = [
        outcome(redundant_case(), ["f1", "b0", "f2"], [], []),
        outcome(direct_case(), ["b1", "f1"], [], []),
    ]
    # ranks: f1=1, f2=3, f1=2 -> coverage at k=1..3 over 3 targets
    assert rank_ecdf_curve(outs, 3) == pytest.approx([1 / 3, 2 / 3, 1.0])


def test_harm_ranking_keeps_only_evidence_of_harm_and_breaks_ties_by_position() -> None:
    ids = ["a", "b", "c", "d"]
    assert harm_ranking(ids, {"a": 0.0, "b": 0.2, "c": 0.5, "d": 0.2}) == ["c", "b", "d"]
    assert harm_ranking(ids, {"a": -1.0}) == []
