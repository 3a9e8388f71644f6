"""Large contexts: K = 64 and K = 200 run on both presets, sync and async, and an estimator
failure after calls were spent fails open or closed like an evaluator failure."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.errors import EstimatorError
from meclear_integrations.core.estimators import KernelShapley
from meclear_integrations.core.game import full, membership_matrix, without
from tests.support.games import CountingEvaluator, make_memories


def direct_fault_value(gold: str, fault: str):
    """The gold memory answers; the fault alone overrides it."""

    def value(ids: frozenset[str]) -> float:
        return 1.0 if gold in ids and fault not in ids else 0.0

    return value


def test_membership_matrix_reads_coalitions_wider_than_64_bits() -> None:
    k = 200
    coalitions = [0, full(k), 1 << 199, without(full(k), 0, 63, 64, 199), (1 << 64) | 1]
    rows = membership_matrix(coalitions, k)
    assert rows.shape == (5, k)
    assert rows[0].sum() == 0 and rows[1].sum() == k
    assert np.flatnonzero(rows[2]).tolist() == [199]
    assert sorted(set(range(k)) - set(np.flatnonzero(rows[3]).tolist())) == [0, 63, 64, 199]
    assert np.flatnonzero(rows[4]).tolist() == [0, 64]


@pytest.mark.parametrize("k", [64, 200])
@pytest.mark.parametrize("preset", ["default", "paper"])
def test_large_contexts_are_attributed_and_cleared(k: int, preset: str) -> None:
    """No overflow, no refusal: the direct fault is found and the clearance verified."""
    gold, fault = f"m{k // 3}", f"m{k - 5}"
    evaluate = CountingEvaluator(direct_fault_value(gold, fault))
    config = ClearanceConfig.preset(preset)  # type: ignore[arg-type]
    report = MeClearEngine(config).clear(make_memories(k), evaluate)
    assert report.status == "complete"
    assert report.cleared_ids == [fault] and report.recovered
    assert report.cost.evaluator_calls == len(evaluate.calls)


@pytest.mark.parametrize("k", [64, 200])
async def test_large_contexts_async(k: int) -> None:
    gold, fault = "m1", f"m{k - 1}"
    value = direct_fault_value(gold, fault)

    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        await asyncio.sleep(0)
        return value(frozenset(m.id for m in coalition))

    report = await MeClearEngine().aclear(make_memories(k), evaluate)
    assert report.status == "complete" and report.cleared_ids == [fault]


def _broken_estimate(self: KernelShapley, game: object) -> None:
    raise FloatingPointError("overflow in the solve")


def test_estimator_failure_after_calls_fails_open(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(KernelShapley, "estimate", _broken_estimate)
    evaluate = CountingEvaluator(direct_fault_value("m0", "m5"))
    memories = make_memories(12)
    config = ClearanceConfig(estimator="kernel")
    report = MeClearEngine(config).clear(memories, evaluate)
    assert report.status == "failed" and report.failure is not None
    assert report.failure.reason == "estimator_error"
    assert report.failure.stage == "attribution"
    assert "FloatingPointError" in report.failure.error
    assert report.kept_ids == [m.id for m in memories] and report.cleared == []
    assert report.cost.evaluator_calls == len(evaluate.calls) > 0


def test_estimator_failure_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(KernelShapley, "estimate", _broken_estimate)
    config = ClearanceConfig(estimator="kernel", failure={"mode": "closed"})
    with pytest.raises(EstimatorError, match="kernel estimator failed") as info:
        MeClearEngine(config).clear(
            make_memories(12), CountingEvaluator(direct_fault_value("m0", "m5"))
        )
    assert isinstance(info.value.__cause__, FloatingPointError)


def test_a_bug_in_an_estimator_is_not_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    def buggy(self: KernelShapley, game: object) -> None:
        raise KeyError("not a numerical failure")

    monkeypatch.setattr(KernelShapley, "estimate", buggy)
    with pytest.raises(KeyError):
        MeClearEngine(ClearanceConfig(estimator="kernel")).clear(
            make_memories(12), CountingEvaluator(direct_fault_value("m0", "m5"))
        )


def copies_game(gold: str, copies: set[str]):
    """The gold memory answers; each of the redundant copies alone overrides it."""

    def value(ids: frozenset[str]) -> float:
        return 1.0 if gold in ids and not ids & copies else 0.0

    return value


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 5), st.integers(0, 19), st.integers(0, 2**32 - 1))
def test_any_number_of_redundant_copies_is_cleared(r: int, extra: int, seed: int) -> None:
    """r = 2..5 copies of one stale claim, each alone breaking the answer: the default
    finds and verifies a clearance of every copy at every K up to 24 and never clears the
    supporting memory. Exact enumeration (K <= 4) and hierarchical attribution (K >= 7)
    clear exactly the copies; sampled flat KernelSHAP (K = 5, 6) can rank a neutral memory
    between two copies, and the nested family then clears it too (verified)."""
    k = r + 1 + extra
    rng = np.random.default_rng(seed)
    positions = rng.permutation(k)
    gold = f"m{positions[0]}"
    copies = {f"m{p}" for p in positions[1 : r + 1]}
    evaluate = CountingEvaluator(copies_game(gold, copies))
    config = ClearanceConfig(seed=seed % 1000)
    report = MeClearEngine(config).clear(make_memories(k), evaluate)
    cleared = set(report.cleared_ids)
    assert report.recovered and copies <= cleared and gold not in cleared
    if report.estimator != "kernel":
        assert cleared == copies
    verified = next(c for c in report.candidates if set(c.memory_ids) == cleared)
    assert verified.recovered and verified.trials >= config.trials


@pytest.mark.parametrize("k", [64, 200])
@pytest.mark.parametrize("seed", range(3))
def test_three_copies_at_scale_within_budget(k: int, seed: int) -> None:
    rng = np.random.default_rng([k, seed])
    positions = rng.permutation(k)
    gold = f"m{positions[0]}"
    copies = {f"m{p}" for p in positions[1:4]}
    evaluate = CountingEvaluator(copies_game(gold, copies))
    report = MeClearEngine(ClearanceConfig(seed=seed)).clear(make_memories(k), evaluate)
    assert report.estimator == "hierarchical"
    assert report.recovered and set(report.cleared_ids) == copies
    assert report.cost.evaluator_calls <= (150 if k <= 64 else 300)
