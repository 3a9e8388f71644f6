"""Paired KernelSHAP and Bernstein-stopped permutations against exact Shapley values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meclear_integrations import ClearanceConfig, MeClearEngine, exact_shapley
from meclear_integrations.core import AutoShapley
from meclear_integrations.core.estimators import (
    BernsteinPermutationShapley,
    KernelShapley,
    kernel_budget,
    resolve_estimator,
)
from meclear_integrations.core.game import CoalitionGame
from tests.support.games import CountingEvaluator, make_memories


def table_game(table: np.ndarray, k: int) -> CoalitionGame:
    game = CoalitionGame(context=tuple(make_memories(k)), trials=1)
    for mask, value in enumerate(table):
        game.store(mask, [float(value)])
    return game


def harm_table(k: int, rng: np.random.Generator) -> np.ndarray:
    """A redundant pair and a joint pair over random background utility, values in [0, 1]."""
    masks = np.arange(1 << k)
    u = rng.uniform(0.3, 0.7, size=1 << k) * 0.2 + 0.5 * ((masks & 1) > 0)
    redundant = ((masks & 0b110) > 0) * 0.3
    joint = ((masks & 0b11000) == 0b11000) * 0.2
    return np.clip(u - redundant - joint + 0.3, 0.0, 1.0)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 7), st.integers(0, 2**32 - 1))
def test_kernel_with_the_whole_table_is_exact(k: int, seed: int) -> None:
    table = np.random.default_rng(seed).random(1 << k)
    estimator = KernelShapley(budget=1 << k, rng=np.random.default_rng(seed))
    assert sorted(estimator.plan(k)) == list(range(1 << k))
    estimate = estimator.estimate(table_game(table, k))
    assert np.allclose(estimate.values, exact_shapley(table, k), atol=1e-9)
    assert np.allclose(estimate.lower, estimate.upper)


@pytest.mark.parametrize("k", [6, 8, 10])
def test_kernel_plan_respects_the_budget_and_always_includes_the_border(k: int) -> None:
    budget = kernel_budget(k, 5.0, 0.75)
    plan = KernelShapley(budget=budget, rng=np.random.default_rng(0)).plan(k)
    assert len(plan) == len(set(plan)) <= budget
    full = (1 << k) - 1
    border = {0, full, *(1 << i for i in range(k)), *(full ^ (1 << i) for i in range(k))}
    assert border <= set(plan)
    middle = set(plan) - border
    assert all((full ^ c) in middle for c in middle)  # complementary pairs


def test_kernel_error_shrinks_with_budget_and_estimates_are_efficient() -> None:
    k, rng = 8, np.random.default_rng(11)
    errors: dict[int, list[float]] = {3: [], 6: [], 12: []}
    for game_seed in range(30):
        table = harm_table(k, rng)
        exact = exact_shapley(table, k)
        game = table_game(table, k)
        for per_memory in errors:
            est = KernelShapley(budget=per_memory * k, rng=np.random.default_rng(game_seed))
            est.plan(k)
            psi = est.estimate(game).values
            assert math.isclose(psi.sum(), table[-1] - table[0], abs_tol=1e-9)
            errors[per_memory].append(float(np.abs(psi - exact).mean()))
    mean = {b: float(np.mean(e)) for b, e in errors.items()}
    assert mean[12] < mean[6] < mean[3]
    assert mean[12] < 0.02


def test_kernel_bootstrap_interval_covers_its_estimate() -> None:
    k = 8
    table = harm_table(k, np.random.default_rng(3))
    est = KernelShapley(budget=40, rng=np.random.default_rng(3))
    est.plan(k)
    estimate = est.estimate(table_game(table, k))
    assert np.all(estimate.lower <= estimate.values) and np.all(estimate.values <= estimate.upper)
    assert np.any(estimate.upper - estimate.lower > 0)


def test_bernstein_stops_early_on_a_low_variance_game() -> None:
    """Additive game: marginals are constant, the interval shrinks as 1/n, H^ settles long
    before the Hoeffding sample size (Eq. 40) would."""
    k, weights = 3, np.array([0.5, 0.3, 0.2])
    table = np.array([weights[[i for i in range(k) if m >> i & 1]].sum() for m in range(1 << k)])
    est = BernsteinPermutationShapley(
        max_permutations=10_000, tau=0.5, delta=0.05, rng=np.random.default_rng(0)
    )
    game = table_game(table, k)
    est.plan(k)
    while more := est.extend(game):
        assert set(more) <= set(range(1 << k))
    assert len(est.orders) < 1_000
    estimate = est.estimate(game)
    assert np.allclose(estimate.values, weights)
    assert np.all(estimate.lower > -0.5)


def test_bernstein_engine_run_matches_exact_harmful_set() -> None:
    def value(ids: frozenset[str]) -> float:
        return 1.0 if "m0" in ids and not ids & {"m1", "m2"} else 0.0

    config = ClearanceConfig(
        estimator=BernsteinPermutationShapley(max_permutations=4096),
        harm_tolerance=0.1,
        trials=1,
    )
    report = MeClearEngine(config).clear(make_memories(4), CountingEvaluator(value))
    assert report.estimator == "bernstein"
    assert set(report.harmful_ids) == {"m1", "m2"}
    assert report.cleared_ids == ["m1", "m2"] and report.recovered
    # The harmful members' intervals sit wholly below -tau (the stopping rule held).
    for mid in ("m1", "m2"):
        assert report.attribution(mid).shapley_interval[1] < -0.1


def test_auto_resolves_by_budget() -> None:
    c = ClearanceConfig()
    assert [resolve_estimator(c, k) for k in (3, 4, 5, 6, 7, 200)] == [
        "exact",
        "exact",
        "exact",
        "kernel",
        "hierarchical",
        "hierarchical",
    ]
    assert (
        resolve_estimator(ClearanceConfig(estimator=AutoShapley(hierarchical_from=12)), 10)
        == "kernel"
    )
    assert resolve_estimator(ClearanceConfig(estimator=AutoShapley(exact_budget=16)), 5) == "kernel"
    assert resolve_estimator(ClearanceConfig(estimator=KernelShapley()), 3) == "kernel"
    assert resolve_estimator(ClearanceConfig.paper(), 5) == "permutation"
    assert kernel_budget(5, 8.0, 0.75) == 24 and kernel_budget(10, 8.0, 0.75) == 80
