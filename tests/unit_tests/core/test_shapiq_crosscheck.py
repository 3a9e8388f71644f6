"""Cross-check against shapiq's exact computer (optional: `pip install -e ".[shapiq]"`)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, exact_shapley
from meclear_integrations.core.estimators.interactions import exact_interactions
from meclear_integrations.core.estimators.kernel import KernelShapley
from meclear_integrations.core.game import CoalitionGame
from tests.support.games import make_memories

shapiq = pytest.importorskip("shapiq")


def _game(table: np.ndarray, k: int):
    def value(masks: np.ndarray) -> np.ndarray:
        masks = np.asarray(masks, dtype=bool)
        return table[(masks * (1 << np.arange(k))).sum(axis=1)]

    return value


@pytest.mark.parametrize("k", [2, 4, 6])
@pytest.mark.parametrize("seed", range(5))
def test_shapley_values_and_interactions_match_shapiq(k: int, seed: int) -> None:
    table = np.random.default_rng(seed).random(1 << k)
    computer = shapiq.ExactComputer(_game(table, k), n_players=k)
    assert np.allclose(exact_shapley(table, k), computer("SV").get_n_order_values(1))
    game = CoalitionGame(context=tuple(make_memories(k)), trials=1)
    for coalition in range(1 << k):
        game.store(coalition, [float(table[coalition])])
    sii = computer("SII", 2)
    ours = exact_interactions(game)
    for i, j in combinations(range(k), 2):
        assert ours[(i, j)] == pytest.approx(sii[(i, j)], abs=1e-9)


def test_kernel_estimator_with_the_whole_table_matches_shapiq() -> None:
    k = 5
    table = np.random.default_rng(11).random(1 << k)
    memories = make_memories(k)
    position = {m.id: i for i, m in enumerate(memories)}

    def evaluate(coalition, trial):  # type: ignore[no-untyped-def]
        return float(table[sum(1 << position[m.id] for m in coalition)])

    config = ClearanceConfig(
        estimator=KernelShapley(coalitions_per_memory=100, max_table_fraction=1.0)
    )
    report = MeClearEngine(config).clear(memories, evaluate)
    expected = shapiq.ExactComputer(_game(table, k), n_players=k)("SV").get_n_order_values(1)
    assert np.allclose([a.shapley for a in report.attributions], expected, atol=1e-9)
