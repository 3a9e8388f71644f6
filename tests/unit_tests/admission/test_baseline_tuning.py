"""Baselines tuned alike: a threshold chosen on dev by macro-F1, applied to recorded scores."""

from __future__ import annotations

import pytest

from meclear_bench.admission_tuning import apply_threshold, tune_threshold


def test_the_chosen_threshold_separates_what_the_published_one_stores() -> None:
    scores = [0.9, 0.8, 0.7, 0.6, 0.62, 0.58]
    gold = ["store", "store", "store", "do_not_store", "do_not_store", "do_not_store"]
    assert apply_threshold(scores, 0.55) == ["store"] * 6  # the published threshold
    threshold, f1 = tune_threshold(scores, gold, published=0.55)
    assert 0.62 < threshold < 0.7 and f1 == pytest.approx(1.0)
    assert apply_threshold(scores, threshold) == gold


def test_ties_go_to_the_published_threshold_and_failures_stay_failed() -> None:
    scores = [0.2, None, 0.8]
    gold = ["do_not_store", "store", "store"]
    threshold, _ = tune_threshold(scores, gold, published=0.5)
    assert threshold == 0.5  # any t in (0.2, 0.8] scores the same: the published one wins
    assert apply_threshold(scores, threshold) == ["do_not_store", None, "store"]
    assert tune_threshold([None], ["store"], published=0.4) == (0.4, 0.0)
