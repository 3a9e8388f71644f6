"""Shapley estimation against ground truth: efficiency, brute force, convergence, Eq. 13/40."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meclear_integrations import (
    ClearanceConfig,
    MeClearEngine,
    exact_shapley,
    hoeffding_epsilon,
    sufficient_permutations,
    sufficient_permutations_for_gap,
)
from meclear_integrations.core import PermutationShapley
from tests.support.games import CountingEvaluator, brute_force_shapley, make_memories


def random_table(k: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random(1 << k)


def table_value(table: np.ndarray, ids: list[str]):
    index = {mid: i for i, mid in enumerate(ids)}

    def value(present: frozenset[str]) -> float:
        mask = 0
        for mid in present:
            mask |= 1 << index[mid]
        return float(table[mask])

    return value


games = st.tuples(st.integers(1, 6), st.integers(0, 2**32 - 1))


@settings(max_examples=40, deadline=None)
@given(games)
def test_exact_shapley_is_efficient_and_matches_brute_force(game: tuple[int, int]) -> None:
    k, seed = game
    table = random_table(k, seed)
    psi = exact_shapley(table, k)
    assert math.isclose(psi.sum(), table[-1] - table[0], abs_tol=1e-9)  # efficiency
    ids = [f"m{i}" for i in range(k)]
    reference = brute_force_shapley(ids, table_value(table, ids))
    assert np.allclose(psi, [reference[mid] for mid in ids], atol=1e-9)


@settings(max_examples=15, deadline=None)
@given(games)
def test_engine_exact_matches_brute_force(game: tuple[int, int]) -> None:
    k, seed = game
    table = random_table(k, seed)
    memories = make_memories(k)
    ids = [m.id for m in memories]
    value = table_value(table, ids)
    report = MeClearEngine(ClearanceConfig(estimator="exact", trials=1)).clear(
        memories, CountingEvaluator(value)
    )
    reference = brute_force_shapley(ids, value)
    for a in report.attributions:
        assert a.shapley == pytest.approx(reference[a.memory_id], abs=1e-9)
        assert a.shapley_interval == (pytest.approx(a.shapley), pytest.approx(a.shapley))


@settings(max_examples=8, deadline=None)
@given(st.integers(2, 5), st.integers(0, 2**32 - 1))
def test_permutation_estimator_converges_to_exact(k: int, seed: int) -> None:
    table = random_table(k, seed)
    memories = make_memories(k)
    value = table_value(table, [m.id for m in memories])
    config = ClearanceConfig(estimator=PermutationShapley(permutations=4000), trials=1, seed=seed)
    report = MeClearEngine(config).clear(memories, CountingEvaluator(value))
    exact = exact_shapley(table, k)
    estimates = np.array([a.shapley for a in report.attributions])
    # Hoeffding (Eq. 13) at delta = 1e-6 bounds the error of all K estimates at once.
    assert np.max(np.abs(estimates - exact)) < hoeffding_epsilon(4000, k, 1e-6)
    assert np.max(np.abs(estimates - exact)) < 0.08
    # Each sampled estimate satisfies efficiency exactly (telescoping marginals).
    assert math.isclose(estimates.sum(), table[-1] - table[0], abs_tol=1e-9)


def test_permutation_intervals_use_eq13() -> None:
    report = MeClearEngine(ClearanceConfig.paper(trials=1)).clear(
        make_memories(5), CountingEvaluator(lambda s: 0.5)
    )
    eps = hoeffding_epsilon(16, 5, 0.05)
    assert eps == pytest.approx(0.814, abs=1e-3)
    for a in report.attributions:
        assert a.shapley_interval == (pytest.approx(-eps), pytest.approx(eps))


def test_sufficient_permutations_eq40_and_eq42() -> None:
    # L >= 2 / eps^2 * log(2K / delta)
    assert sufficient_permutations(0.1, 0.05, 5) == math.ceil(200 * math.log(200))
    # With that L, Eq. 13 gives an epsilon no larger than the one asked for.
    assert hoeffding_epsilon(sufficient_permutations(0.1, 0.05, 5), 5, 0.05) <= 0.1
    psi = [-0.3, 0.2, -0.06]
    gamma = min(abs(p + 0.05) for p in psi)
    assert sufficient_permutations_for_gap(psi, 0.05, 0.05) == sufficient_permutations(
        gamma, 0.05, 3
    )
    with pytest.raises(ValueError, match="threshold"):
        sufficient_permutations_for_gap([-0.05, 0.2], 0.05, 0.05)
    with pytest.raises(ValueError):
        sufficient_permutations(0.0, 0.05, 5)
