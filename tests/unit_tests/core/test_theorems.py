"""Theorem 1, Corollary A.1 and Theorem 2 of the MeClear paper on random games."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meclear_integrations import (
    ClearanceConfig,
    ClearanceReport,
    MeClearEngine,
    Memory,
    StageEvent,
)
from meclear_integrations.core import AutoShapley, PermutationShapley
from meclear_integrations.core.estimators.kernel import KernelShapley
from meclear_integrations.core.verification.sequential import clopper_pearson
from tests.support.games import CountingEvaluator, make_memories


def group_harm_game(k: int, group: set[str], delta: float, seed: int):
    """v(S) = u(S minus R) - delta * 1[S meets R] (Eq. 8 / Eq. 31), u random in [delta, 1]."""
    rng = np.random.default_rng(seed)
    others = [f"m{i}" for i in range(k) if f"m{i}" not in group]
    table = {frozenset(): 0.0}
    u_values = rng.uniform(delta, 1.0, size=1 << len(others))

    def u(present: frozenset[str]) -> float:
        mask = sum(1 << i for i, mid in enumerate(others) if mid in present)
        return float(u_values[mask])

    del table

    def value(present: frozenset[str]) -> float:
        return u(present - group) - (delta if present & group else 0.0)

    return value


@settings(max_examples=25, deadline=None)
@given(
    st.integers(3, 6),
    st.integers(2, 3),
    st.floats(0.1, 0.5),
    st.integers(0, 2**32 - 1),
)
def test_group_harm_loo_blind_spot(k: int, r: int, delta: float, seed: int) -> None:
    """Theorem 1 (r = 2) and Corollary A.1: LOO = 0 and psi = -delta / r for each member."""
    r = min(r, k - 1)
    group = {f"m{i}" for i in range(r)}
    value = group_harm_game(k, group, delta, seed)
    report = MeClearEngine(ClearanceConfig(estimator="exact", trials=1)).clear(
        make_memories(k), CountingEvaluator(value)
    )
    for a in report.attributions:
        if a.memory_id in group:
            assert a.loo_effect == pytest.approx(0.0, abs=1e-12)
            assert a.loo_label == "inconclusive"
            assert a.shapley == pytest.approx(-delta / r, abs=1e-9)


def test_redundant_pair_is_labelled_redundant_and_joint_pair_joint() -> None:
    def redundant(ids: frozenset[str]) -> float:
        return 1.0 if "m0" in ids and not ids & {"m1", "m2"} else 0.0

    def joint(ids: frozenset[str]) -> float:
        return 0.0 if {"m1", "m2"} <= ids or "m0" not in ids else 1.0

    config = ClearanceConfig(estimator="exact", interactions=True, trials=1)
    # Redundant harm needs both faults cleared; joint harm is undone by clearing either one,
    # and Eq. 20 picks the smallest maximum-gain candidate.
    cases = ((redundant, "redundant", 2), (joint, "joint", 1))
    for value, label, cleared in cases:
        report = MeClearEngine(config).clear(make_memories(4), CountingEvaluator(value))
        pair = next(p for p in report.interactions if p.memory_ids == ("m1", "m2"))
        assert pair.label == label
        background = next(p for p in report.interactions if p.memory_ids == ("m0", "m3"))
        assert background.label == "additive"
        assert len(report.cleared_ids) == cleared and report.recovered
        assert set(report.cleared_ids) <= {"m1", "m2"}


def test_sampled_interactions_converge_to_exact() -> None:
    def redundant(ids: frozenset[str]) -> float:
        return 1.0 if "m0" in ids and not ids & {"m1", "m2"} else 0.0

    exact = MeClearEngine(ClearanceConfig(estimator="exact", interactions=True, trials=1)).clear(
        make_memories(4), CountingEvaluator(redundant)
    )
    sampled = MeClearEngine(
        ClearanceConfig(
            estimator=PermutationShapley(permutations=3000), interactions=True, trials=1, seed=3
        )
    ).clear(make_memories(4), CountingEvaluator(redundant))
    for a, b in zip(exact.interactions, sampled.interactions, strict=True):
        assert a.memory_ids == b.memory_ids
        assert b.omega == pytest.approx(a.omega, abs=0.06)


def check_candidate_families(report: ClearanceReport, events: list[StageEvent]) -> None:
    """The structure of every candidate family the engine may try (C_0 first)."""
    candidates = report.candidates
    assert candidates[0].size == 0 and candidates[0].family in {"nested", "minimal"}
    start = next(e for e in events if e.stage == "clearance" and e.phase == "start")
    fallback = start.payload.get("fallback_ids", [])
    psi = {a.memory_id: a.shapley for a in report.attributions}
    families = [c.family for c in candidates]
    main = [c for c in candidates if c.family in {"nested", "minimal"}]
    if main[0].family == "nested":
        # Nested family (Eq. 17): each candidate extends the previous one.
        for prev, nxt in pairwise(main):
            assert nxt.memory_ids[: prev.size] == prev.memory_ids
            assert nxt.size == prev.size + 1
    else:
        # Minimal search (Eq. 5): every subset of H^, smallest first.
        assert len(main) == 2 ** len(main[-1].memory_ids)
        assert [c.size for c in main] == sorted(c.size for c in main)
    # Fallback (H^ plus the first j memories below -tau whose interval reaches 0).
    top = set(main[-1].memory_ids)
    for j, extra in enumerate([c for c in candidates if c.family == "fallback"], start=1):
        assert set(extra.memory_ids) == top | set(fallback[:j])
    # Escalation: only after every earlier non-empty candidate failed verification;
    # subsets of the memories singled out or valued below +tau, smallest first.
    escalated = [c for c in candidates if c.family == "escalation"]
    if escalated:
        first = families.index("escalation")
        assert families[first:] == ["escalation"] * len(escalated)
        assert not any(c.admissible for c in candidates[1:first])
        assert [c.size for c in escalated] == sorted(c.size for c in escalated)
        hierarchy = next(
            e for e in events if e.stage == "attribution" and e.phase == "end"
        ).payload.get("hierarchy", {})
        singled = set(hierarchy.get("suspect_ids", []))
        for c in escalated:
            tau = report.config.harm_tolerance
            assert all(psi[m] < tau or m in singled for m in c.memory_ids)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 9),
    st.integers(0, 2**32 - 1),
    st.sampled_from(["exact", "permutation", "kernel", "hierarchical", "auto"]),
    st.integers(1, 3),
    st.sampled_from(["paper", "default"]),
    st.sampled_from([0.0, 0.15]),
)
def test_theorem2_on_random_games(
    k: int, seed: int, estimator: str, trials: int, preset: str, noise: float
) -> None:
    """Non-degradation, verified recovery, minimal max-gain choice, unchanged fallback,
    for the paper preset and the budget-aware default (adaptive trials, early exit,
    minimal clearance on complete tables, the sequential verification rule, hierarchical
    attribution, escalation), on games whose trials agree (noise 0) or disagree (each
    trial's score flipped with 15%), and the structure of every candidate family."""
    rng = np.random.default_rng(seed)
    # Scores in {0, 0.5, 1} per coalition so recovery and gains both vary; with noise a
    # trial's score is flipped (s -> 1 - s), so trials of one coalition disagree.
    base = rng.choice([0.0, 0.5, 1.0], size=(1 << k, 1), p=[0.35, 0.15, 0.5])
    flips = rng.random((1 << k, 32)) < noise  # up to the close trials (24)
    scores = np.where(flips, 1.0 - base, base)
    memories = make_memories(k)
    position = {m.id: i for i, m in enumerate(memories)}

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        mask = sum(1 << position[m.id] for m in coalition)
        return float(scores[mask, trial])

    estimators: dict[str, object] = {
        "permutation": PermutationShapley(permutations=8),
        "kernel": KernelShapley(coalitions_per_memory=3.0),
        "auto": AutoShapley(exact_budget=16, coalitions_per_memory=3.0),
    }
    config = ClearanceConfig.preset(
        preset,  # type: ignore[arg-type]
        estimator=estimators.get(estimator, estimator),
        trials=trials,
        seed=seed,
    )
    events: list[StageEvent] = []
    report = MeClearEngine(config, listener=events.append).clear(memories, evaluate)
    assert report.baseline_value is not None and report.final_value is not None
    assert report.final_value >= report.baseline_value - 1e-12  # Eq. 21
    if report.status == "unverified":  # abstained: nothing verified, nothing cleared
        assert report.cleared == [] and not report.recovered
        assert [m.id for m in report.kept] == [m.id for m in memories]
        return
    assert report.status == "complete"
    admissible = [c for c in report.candidates if c.admissible]
    best = max(c.value for c in admissible)
    chosen = min(c.size for c in admissible if c.value >= best - 1e-12)
    if noise == 0.0 or config.verification.rule == "paper":
        assert len(report.cleared) == chosen  # Eq. 20: min argmax of the value
    else:
        # under noise a larger candidate wins only when verifiably better: the selection
        # is admissible and no larger than the smallest maximum-value candidate
        assert len(report.cleared) <= chosen
        assert any(c.admissible and c.size == len(report.cleared) for c in report.candidates)
    if report.cleared:
        assert report.recovered  # Eq. 22
        assert set(report.cleared_ids) <= set(report.harmful_ids)
        selected = next(c for c in report.candidates if c.size == chosen and c.admissible)
        if config.verification.rule == "sequential":
            # Never a cleared context that was not verified: its pass rate's lower bound
            # reaches the recovery rate on the trials it was given.
            kept = sum(1 << position[m.id] for m in report.kept)
            passes = sum(
                scores[kept, t] >= config.verification.success_threshold
                for t in range(selected.trials)
            )
            lower = clopper_pearson(passes, selected.trials, config.verification.delta)[0]
            assert lower >= config.verification.recovery_rate
    else:
        assert [m.id for m in report.kept] == [m.id for m in memories]
    if len(admissible) == 1:
        assert report.cleared == []
    check_candidate_families(report, events)
    # Kept memories stay in retrieval order.
    kept_positions = [position[m.id] for m in report.kept]
    assert kept_positions == sorted(kept_positions)
