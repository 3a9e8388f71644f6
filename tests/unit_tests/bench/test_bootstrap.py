"""The two-level cluster bootstrap on known distributions."""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
import pytest

from meclear_bench.bootstrap import ClusterBootstrap, percentile_interval


def test_weights_resample_clusters_then_queries() -> None:
    clusters = ["a"] * 6 + ["b"] * 2
    queries = ["q1", "q1", "q2", "q2", "q3", "q3", "q4", "q5"]
    boot = ClusterBootstrap(clusters, queries, replicates=500, seed=1)
    w = boot.weights
    assert w.shape == (500, 8)
    # cases of one query always share a weight (a drawn query brings all its cases)
    np.testing.assert_array_equal(w[:, 0], w[:, 1])
    np.testing.assert_array_equal(w[:, 4], w[:, 5])
    # per replicate: queries of cluster a drawn 3 * (times a was drawn), b: 2 * (times b)
    qa = w[:, [0, 2, 4]].sum(axis=1)
    qb = w[:, [6, 7]].sum(axis=1)
    draws_a, draws_b = qa / 3, qb / 2
    np.testing.assert_array_equal(draws_a + draws_b, 2)  # two clusters drawn
    assert set(np.unique(draws_a)) == {0, 1, 2}


def test_interval_covers_the_known_mean_with_normal_width() -> None:
    rng = np.random.default_rng(0)
    n, p = 400, 0.3
    x = (rng.random(n) < p).astype(float)
    ids = [str(i) for i in range(n)]
    boot = ClusterBootstrap(ids, ids, replicates=2000, seed=3)
    lo, hi = boot.interval(x, np.ones(n))
    assert lo < x.mean() < hi
    assert lo < p < hi
    normal = 2 * 1.96 * np.sqrt(x.mean() * (1 - x.mean()) / n)
    assert hi - lo == pytest.approx(normal, rel=0.15)


def test_clustered_data_gives_wider_intervals_than_iid() -> None:
    rng = np.random.default_rng(1)
    per_cluster = rng.random(10) < 0.5
    x = np.repeat(per_cluster, 20).astype(float)  # 10 clusters of identical cases
    clusters = [f"c{i // 20}" for i in range(200)]
    queries = [f"q{i}" for i in range(200)]
    clustered = ClusterBootstrap(clusters, queries, replicates=1000, seed=0)
    iid = ClusterBootstrap(queries, queries, replicates=1000, seed=0)
    lo_c, hi_c = clustered.interval(x, np.ones(200))
    lo_i, hi_i = iid.interval(x, np.ones(200))
    assert (hi_c - lo_c) > 3 * (hi_i - lo_i)


def test_identical_paired_difference_is_exactly_zero() -> None:
    ids = [f"q{i}" for i in range(50)]
    boot = ClusterBootstrap(["c"] * 50, ids, replicates=200)
    assert boot.interval(np.zeros(50), np.ones(50)) == (0.0, 0.0)


def test_empty_denominators_give_no_interval() -> None:
    boot = ClusterBootstrap(["c", "c"], ["a", "b"], replicates=10)
    assert boot.interval(np.zeros(2), np.zeros(2)) is None
    assert percentile_interval(np.array([np.nan])) is None


def _calls(work: Callable[[], object]) -> int:
    """Python and C function calls ``work`` makes (a profile hook counts them)."""
    count = 0

    def hook(frame: object, event: str, arg: object) -> None:
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(hook)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


def test_replicates_are_vectorised() -> None:
    """2,000 replicates make no more calls than 20: no per-replicate Python loop (which
    made 2,000 replicates take tens of seconds), counted rather than timed."""
    n = 2000
    clusters = [f"c{i % 10}" for i in range(n)]
    queries = [f"q{i // 2}" for i in range(n)]

    def run(replicates: int) -> Callable[[], object]:
        def work() -> None:
            boot = ClusterBootstrap(clusters, queries, replicates=replicates)
            for _ in range(10):
                boot.interval(np.ones(n), np.ones(n))

        return work

    run(20)()  # first calls import and cache what later ones reuse
    few, many = _calls(run(20)), _calls(run(2000))
    assert many - few < 200  # a per-replicate loop adds >= 1,980
