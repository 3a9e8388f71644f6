"""The interval harm rule: flag psi_i < -tau only when the interval is clear of zero."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.clearance import harmful_positions
from tests.core.games import make_memories


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
