"""The interval harm rule: flag psi_i < -tau only when the interval is clear of zero."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory, StageEvent
from meclear_integrations.core import PermutationShapley
from meclear_integrations.core.estimators.kernel import KernelShapley
from meclear_integrations.core.game import CoalitionGame
from meclear_integrations.core.verification.rule import fallback_candidates, harmful_positions
from tests.support.games import make_memories


def test_interval_rule_drops_estimates_that_could_be_zero() -> None:
    psi = [-0.3, -0.06, 0.2, -0.08]
    upper = [-0.1, 0.01, 0.3, -0.02]
    assert harmful_positions(psi, 0.05) == [0, 3, 1]
    assert harmful_positions(psi, 0.05, upper) == [0, 3]


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 5), st.integers(0, 2**32 - 1))
def test_interval_rule_is_eq14_for_exact_enumeration(k: int, seed: int) -> None:
    table = np.random.default_rng(seed).choice([0.0, 0.5, 1.0], size=1 << k)
    memories = make_memories(k)
    position = {m.id: i for i, m in enumerate(memories)}

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        return float(table[sum(1 << position[m.id] for m in coalition)])

    reports = [
        MeClearEngine(ClearanceConfig.paper(estimator="exact", harm_rule=rule)).clear(
            memories, evaluate
        )
        for rule in ("threshold", "interval")
    ]
    assert reports[0].harmful_ids == reports[1].harmful_ids


def test_kernel_noise_on_background_is_not_flagged() -> None:
    """K=10 redundant harm: background memories have psi = 0 exactly; the kernel estimate
    is noisy, and the interval rule keeps the noise out of the harmful set."""

    def value(ids: frozenset[str]) -> float:
        return 1.0 if "m0" in ids and not ids & {"m1", "m2"} else 0.0

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        return value(frozenset(m.id for m in coalition))

    flagged = {"threshold": 0, "interval": 0}
    targets_found = {"threshold": 0, "interval": 0}
    for seed in range(20):
        for rule in flagged:
            config = ClearanceConfig(estimator="kernel", harm_rule=rule, seed=seed)
            report = MeClearEngine(config).clear(make_memories(10), evaluate)
            harmful = set(report.harmful_ids)
            flagged[rule] += len(harmful - {"m1", "m2"})
            targets_found[rule] += len(harmful & {"m1", "m2"})
    assert targets_found["interval"] == targets_found["threshold"] == 40
    assert flagged["interval"] < flagged["threshold"]


def test_fallback_candidates_continue_the_nested_family() -> None:
    assert fallback_candidates([3, 1], [0, 4]) == [[3, 1, 0], [3, 1, 0, 4]]
    assert fallback_candidates([3], []) == []
    assert fallback_candidates([], [2]) == [[2]]


def redundant_value(ids: frozenset[str]) -> float:
    return 1.0 if "m0" in ids and not ids & {"m1", "m2"} else 0.0


def test_a_harmful_memory_with_a_wide_interval_is_still_cleared_when_needed() -> None:
    """Permutation estimates at L=64 have Hoeffding intervals reaching far above zero, so
    the interval rule confirms nothing; the fallback candidates still find and verify
    the redundant pair, and the cleared pair joins the reported harmful set."""
    events: list[StageEvent] = []
    config = ClearanceConfig(estimator=PermutationShapley(permutations=64), harm_rule="interval")
    report = MeClearEngine(config, listener=events.append).clear(
        make_memories(5), lambda c, t: redundant_value(frozenset(m.id for m in c))
    )
    attribution_end = next(e for e in events if e.stage == "attribution" and e.phase == "end")
    clearance_start = next(e for e in events if e.stage == "clearance" and e.phase == "start")
    assert attribution_end.payload["harmful_ids"] == []  # nothing interval-confirmed
    assert sorted(clearance_start.payload["fallback_ids"]) == ["m1", "m2"]
    assert report.recovered and sorted(report.cleared_ids) == ["m1", "m2"]
    assert sorted(report.harmful_ids) == ["m1", "m2"]


def test_kernel_intervals_are_simultaneous_over_the_memories() -> None:
    """Per-memory tails of delta / (2K) give intervals containing the per-memory ones
    (delta / 2) and flag fewer neutral background memories."""
    memories = make_memories(10)
    position = {m.id: i for i, m in enumerate(memories)}
    game_values = {
        mask: redundant_value(frozenset(m.id for m in memories if mask >> position[m.id] & 1))
        for mask in range(1 << 10)
    }
    background_flags = {True: 0, False: 0}
    for seed in range(10):
        estimates = {}
        for simultaneous in (True, False):
            estimator = KernelShapley(
                budget=100, rng=np.random.default_rng(seed), simultaneous=simultaneous
            )
            game = CoalitionGame(context=tuple(memories), trials=1)
            for mask in estimator.plan(10):
                game.store(mask, [game_values[mask]])
            estimates[simultaneous] = estimate = estimator.estimate(game)
            background_flags[simultaneous] += sum(
                1 for i in range(3, 10) if estimate.values[i] < -0.05 and estimate.upper[i] < 0
            )
        wide, narrow = estimates[True], estimates[False]
        assert np.array_equal(wide.values, narrow.values)
        assert np.all(wide.lower <= narrow.lower + 1e-12)
        assert np.all(wide.upper >= narrow.upper - 1e-12)
    assert background_flags[True] < background_flags[False]
