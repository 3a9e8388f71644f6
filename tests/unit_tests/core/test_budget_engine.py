"""Budget levers of the default configuration: early exit, adaptive trials, budgets and
exact minimal clearance (Eq. 5). One-batch concurrency (model round trips on the real
clock) is tested in the integration tier (``core/test_round_trips.py``)."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory, StageEvent
from meclear_integrations.core import ExactShapley
from meclear_integrations.core.config import Verification
from meclear_integrations.core.estimators import kernel_budget
from meclear_integrations.core.estimators.kernel import KernelShapley
from tests.support.games import CountingEvaluator, make_memories
from tests.support.round_trips import redundant


@pytest.mark.parametrize("trials", [1, 2, 3, 5])
@pytest.mark.parametrize("estimator", ["auto", "exact", "kernel", "permutation"])
@pytest.mark.parametrize("verification", ["paper", "sequential"])
def test_early_exit_costs(trials: int, estimator: str, verification: str) -> None:
    """The paper's rule exits after T passing trials (one round); the sequential rule after
    the passes its recovery test needs (4 with the defaults, at least T): T, then the rest
    in a second round."""
    evaluate = CountingEvaluator(lambda ids: 1.0)
    events: list[StageEvent] = []
    config = ClearanceConfig(estimator=estimator, trials=trials, verification=verification)
    report = MeClearEngine(config, listener=events.append).clear(make_memories(6), evaluate)
    expected = trials if verification == "paper" else max(trials, 4)
    assert len(evaluate.calls) == expected == report.cost.evaluator_calls
    assert {ids for ids, _ in evaluate.calls} == {frozenset(f"m{i}" for i in range(6))}
    assert report.early_exit and report.recovered and report.cleared == []
    rounds = 1 if verification == "paper" or trials >= 4 else 2
    assert report.attributions == [] and report.cost.rounds == rounds
    stages = [e for e in events if e.phase != "progress"]
    assert [(e.stage, e.phase) for e in stages] == [
        ("screening", "start"),
        ("screening", "end"),
        ("clearance", "start"),
        ("clearance", "end"),
    ]
    assert stages[1].payload["early_exit"] is True
    progress = [e for e in events if e.phase == "progress"]  # one batch per round
    assert {e.stage for e in progress} == {"screening"}
    assert {e.payload["batch"] for e in progress} == set(range(1, rounds + 1))
    assert progress[-1].payload["run_calls_done"] == expected
    assert "early exit" in report.to_table()


def test_paper_preset_never_exits_early() -> None:
    evaluate = CountingEvaluator(lambda ids: 1.0)
    report = MeClearEngine(ClearanceConfig.paper()).clear(make_memories(4), evaluate)
    assert not report.early_exit and len(report.attributions) == 4
    assert report.cost.evaluator_calls == 2 * report.cost.coalitions > 2


def test_early_exit_needs_the_maximum_score_below_a_threshold_of_one() -> None:
    """Eq. 20: with success_threshold < 1 a context that recovers but scores below 1 can
    still gain, so it is not an early exit; the clearance that reaches 1 is selected."""

    def graded(ids: frozenset[str]) -> float:
        return 0.8 if "m1" in ids else 1.0

    for verification in ("paper", "sequential"):
        config = ClearanceConfig(
            estimator="exact",
            verification={"rule": verification, "success_threshold": 0.7},
        )
        report = MeClearEngine(config).clear(make_memories(4), CountingEvaluator(graded))
        assert not report.early_exit, verification
        assert report.cleared_ids == ["m1"] and report.final_value == 1.0, verification
        assert report.baseline_value == pytest.approx(0.8)


def test_adaptive_trials_follow_the_documented_policy() -> None:
    """The paper's rule with adaptive trials. Baseline: T trials; LOO and attribution
    coalitions: 1; candidates whose first trial passes: T, the first alone and (as it
    reaches value 1) no other."""
    evaluate = CountingEvaluator(redundant)
    config = ClearanceConfig(estimator="exact", trials=3, verification="paper")
    report = MeClearEngine(config).clear(make_memories(5), evaluate)
    per_coalition = Counter(ids for ids, _ in evaluate.calls)
    everything = frozenset(f"m{i}" for i in range(5))
    chosen = everything - {"m1", "m2"}
    assert per_coalition[everything] == 3
    assert per_coalition[chosen] == 3
    assert all(n == 1 for ids, n in per_coalition.items() if ids not in (everything, chosen))
    assert len(per_coalition) == 32 and sum(per_coalition.values()) == 32 + 4
    assert report.cleared_ids == ["m1", "m2"] and report.recovered
    selected = next(c for c in report.candidates if c.memory_ids == ["m1", "m2"])
    assert selected.trials == 3 and selected.recovered and selected.admissible
    # Candidates ruled out by their first trial keep one trial and are not admissible.
    for c in report.candidates:
        if c.memory_ids and c.memory_ids != ["m1", "m2"]:
            assert c.trials == 1 and not c.admissible


def test_a_candidate_failing_a_later_trial_is_not_selected() -> None:
    """Verification uses all T trials: a candidate that passes trial 0 only is refused.

    This is also the documented price of adaptive trials: attribution sees one trial, so
    harm expressed only in a later trial (m2 here) is not attributed and nothing is
    cleared (non-degradation holds); the paper preset (T trials everywhere) finds it."""

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        ids = {m.id for m in coalition}
        if "m1" in ids:
            return 0.0
        if "m2" in ids:  # clearing m1 alone passes trial 0 only
            return 1.0 if trial == 0 else 0.0
        return 1.0

    report = MeClearEngine(
        ClearanceConfig(estimator="exact", trials=2, verification="paper")
    ).clear(make_memories(3), evaluate)
    by_ids = {tuple(c.memory_ids): c for c in report.candidates}
    assert report.harmful_ids == ["m1"]
    assert not by_ids[("m1",)].recovered and by_ids[("m1",)].trials == 2
    assert report.cleared == [] and not report.recovered
    # The sequential rule sees the disagreement, asks for more trials, and refuses too.
    no_surrogate = Verification(surrogate=None, close_trials=None)
    sequential = MeClearEngine(
        ClearanceConfig(estimator="exact", trials=2, verification=no_surrogate)
    ).clear(make_memories(3), evaluate)
    cleared_m1 = {tuple(c.memory_ids): c for c in sequential.candidates}[("m1",)]
    assert not cleared_m1.recovered and cleared_m1.trials > 2
    assert sequential.cleared == [] and not sequential.recovered
    # With the default's close trials (``close_trials``), m1's clearance, which passed one
    # trial in twelve, gets trials until it verifiably cannot recover; the full context's
    # failing trials then show m2 harmful in the residual game on M minus {m1}, and the
    # residual candidate {m1, m2} verifies.
    close = MeClearEngine(
        ClearanceConfig(estimator="exact", trials=2, verification=Verification(surrogate=None))
    ).clear(make_memories(3), evaluate)
    by_close = {tuple(c.memory_ids): c for c in close.candidates}
    assert not by_close[("m1",)].recovered and by_close[("m1",)].trials > 12
    assert by_close[("m1", "m2")].family == "residual" and by_close[("m1", "m2")].recovered
    assert close.cleared_ids == ["m1", "m2"] and close.recovered
    # The default's surrogate candidates (a Lasso fit on the table, no model call) weigh
    # m2 harmful too (its coalitions without m1 fail every later trial) and propose both;
    # that candidate verifies, so the default finds what the paper preset finds.
    default = MeClearEngine(ClearanceConfig(estimator="exact", trials=2)).clear(
        make_memories(3), evaluate
    )
    by_default = {tuple(c.memory_ids): c for c in default.candidates}
    assert not by_default[("m1",)].recovered and by_default[("m1",)].trials > 2
    assert by_default[("m1", "m2")].family == "surrogate" and by_default[("m1", "m2")].recovered
    assert default.cleared_ids == ["m1", "m2"] and default.recovered
    paper = MeClearEngine(ClearanceConfig.paper(estimator="exact", trials=2)).clear(
        make_memories(3), evaluate
    )
    assert paper.cleared_ids == ["m1", "m2"] and paper.recovered


def test_default_costs_less_than_the_paper_on_the_redundant_example_k5() -> None:
    """Fewer evaluator calls (at K = 5 the default enumerates all 32 coalitions, which
    the paper's L = 16 permutations nearly reach: 27 distinct, and miss the pair); the
    paper's rule with adaptive trials on the KernelSHAP plan costs half the paper's
    evaluator calls."""
    paper_eval, default_eval = CountingEvaluator(redundant), CountingEvaluator(redundant)
    paper = MeClearEngine(ClearanceConfig.paper()).clear(make_memories(5), paper_eval)
    assert paper.cost.evaluator_calls == len(paper_eval.calls)  # (L=16 may miss the pair)
    default = MeClearEngine().clear(make_memories(5), default_eval)
    assert default.estimator == "exact"  # 2^5 = 32 coalitions at most
    assert default.cost.coalitions <= 1 << 5
    assert len(default_eval.calls) < len(paper_eval.calls)
    assert default.cleared_ids == ["m1", "m2"] and default.recovered
    adaptive_eval = CountingEvaluator(redundant)
    kernel = ClearanceConfig(verification="paper", estimator="kernel")  # the K = 6+ plan
    MeClearEngine(kernel).clear(make_memories(5), adaptive_eval)
    assert len(adaptive_eval.calls) <= 0.5 * len(paper_eval.calls)


@pytest.mark.parametrize("k", [8, 12, 20])
def test_kernel_budget_is_respected_by_the_engine(k: int) -> None:
    evaluate = CountingEvaluator(redundant)
    config = ClearanceConfig(estimator=KernelShapley(coalitions_per_memory=4.0), escalation=False)
    report = MeClearEngine(config).clear(make_memories(k), evaluate)
    budget = kernel_budget(k, 4.0, 0.75)
    coalitions = {ids for ids, _ in evaluate.calls}
    # Attribution coalitions plus at most one verified candidate outside the plan.
    assert len(coalitions) <= budget + len(report.candidates)
    assert report.cost.coalitions == len(coalitions)


def brute_force_eq5(table: np.ndarray, trials: np.ndarray, harmful: list[int], k: int):
    """Eq. 4-5 with verification: max admissible gain over all subsets of H^, then the
    minimum cardinality; returns (gain, size)."""
    full = (1 << k) - 1
    base = table[full]
    best_gain, best_size = 0.0, 0
    for size in range(1, len(harmful) + 1):
        for cleared in combinations(harmful, size):
            mask = full
            for i in cleared:
                mask &= ~(1 << i)
            gain = table[mask] - base
            if gain > 1e-12 and trials[mask].min() >= 1.0 and gain > best_gain + 1e-12:
                best_gain, best_size = gain, size
    return best_gain, best_size


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 7), st.integers(0, 2**32 - 1), st.integers(1, 2))
def test_exact_minimal_clearance_equals_brute_force_eq5(k: int, seed: int, t: int) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.choice([0.0, 1.0], size=(1 << k, t), p=[0.5, 0.5])
    memories = make_memories(k)
    position = {m.id: i for i, m in enumerate(memories)}

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        return float(scores[sum(1 << position[m.id] for m in coalition), trial])

    config = ClearanceConfig.paper(
        estimator=ExactShapley(max_memories=8), trials=t, clearance="minimal"
    )
    report = MeClearEngine(config).clear(memories, evaluate)
    assert report.clearance_search == "minimal"
    harmful = [position[mid] for mid in report.harmful_ids]
    gain, size = brute_force_eq5(scores.mean(axis=1), scores, harmful, k)
    assert len(report.cleared) == size
    assert (report.final_value or 0.0) - (report.baseline_value or 0.0) == pytest.approx(gain)
    nested = MeClearEngine(config.model_copy(update={"clearance": "nested"})).clear(
        memories, evaluate
    )
    nested_gain = (nested.final_value or 0.0) - (nested.baseline_value or 0.0)
    assert nested_gain <= gain + 1e-12  # the nested family is a subset of all subsets


def test_auto_clearance_is_minimal_only_on_complete_tables() -> None:
    exact = MeClearEngine(ClearanceConfig(estimator="exact")).clear(
        make_memories(5), CountingEvaluator(redundant)
    )
    assert exact.clearance_search == "minimal"
    sampled = MeClearEngine(
        ClearanceConfig(estimator=KernelShapley(coalitions_per_memory=3))
    ).clear(make_memories(9), CountingEvaluator(redundant))
    assert sampled.clearance_search == "nested"
