"""Hierarchical attribution, its grouping helpers and the escalation search."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from meclear_bench.scale_games import ScaleFamily, scale_games
from meclear_integrations import ClearanceConfig, MeClearEngine, Memory, StageEvent
from meclear_integrations.core import AutoShapley
from meclear_integrations.core.escalation import (
    escalation_candidates,
    escalation_pool,
    wide_pool,
)
from meclear_integrations.core.game import CoalitionGame, members
from meclear_integrations.core.grouping import (
    cosine_similarity,
    lexical_similarity,
)
from meclear_integrations.core.partition import similarity_order, spread_partition
from meclear_integrations.core.verification.rule import candidate_coalition
from tests.support.games import CountingEvaluator, make_memories


# ----------------------------------------------------------------------------- grouping
def test_lexical_similarity_is_a_cosine_over_words() -> None:
    texts = [
        "Anna moved to Lisbon in the spring.",
        "Anna moved to Lisbon in the spring.",
        "Tom adopted a dog called Biscuit.",
        "",
    ]
    s = lexical_similarity(texts)
    assert s.shape == (4, 4) and np.allclose(s, s.T) and np.allclose(np.diag(s), 1.0)
    assert s[0, 1] == pytest.approx(1.0)
    assert s[0, 2] == pytest.approx(0.0) and s[3, 0] == 0.0
    dense = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    assert cosine_similarity(dense)[0, 1] == pytest.approx(1 / np.sqrt(2))
    with pytest.raises(ValueError):
        cosine_similarity(np.array([[np.nan, 1.0]]))


def test_spread_partition_separates_look_alikes_and_balances_sizes() -> None:
    k, n_blocks = 23, 5
    similarity = np.eye(k)
    cluster = [2, 7, 11, 19, 22]  # five near-duplicates
    for i in cluster:
        for j in cluster:
            similarity[i, j] = 0.95
    blocks = spread_partition(similarity, n_blocks, np.random.default_rng(3))
    assert sorted(i for b in blocks for i in b) == list(range(k))
    assert {len(b) for b in blocks} <= {k // n_blocks, k // n_blocks + 1}
    assert all(len(set(b) & set(cluster)) == 1 for b in blocks)


def test_similarity_order_puts_copies_next_to_each_other() -> None:
    texts = [
        "Tom adopted a dog called Biscuit.",
        "Anna moved to Lisbon in the spring.",
        "Grace took up pottery last autumn.",
        "Reminder: Anna moved to Lisbon in the spring.",
        "Ben works as a baker these days.",
    ]
    order = similarity_order(range(5), lexical_similarity(texts))
    assert sorted(order) == list(range(5))
    assert abs(order.index(1) - order.index(3)) == 1


# ----------------------------------------------------------------------------- engine
def redundant(gold: str, faults: set[str]):
    def value(ids: frozenset[str]) -> float:
        return 1.0 if gold in ids and not ids & faults else 0.0

    return value


def joint(gold: str, pair: set[str]):
    def value(ids: frozenset[str]) -> float:
        return 1.0 if gold in ids and not pair <= ids else 0.0

    return value


def attribution_end(events: list[StageEvent]) -> dict:
    return next(e for e in events if e.stage == "attribution" and e.phase == "end").payload


def test_a_direct_fault_is_valued_on_the_reduced_game() -> None:
    """One gold and one fault among 40: the fault's value is its exact Shapley value
    (-1/2) and only the screened memories get a measured leave-one-out effect."""
    events: list[StageEvent] = []
    evaluate = CountingEvaluator(redundant("m3", {"m30"}))
    report = MeClearEngine(listener=events.append).clear(make_memories(40), evaluate)
    assert report.estimator == "hierarchical"
    assert report.cleared_ids == ["m30"] and report.harmful_ids == ["m30"]
    fault = report.attribution("m30")
    assert fault.shapley == pytest.approx(-0.5) and fault.loo_effect == pytest.approx(-1.0)
    assert fault.loo_label == "harmful"
    measured = [a.memory_id for a in report.attributions if a.loo_effect is not None]
    assert measured == ["m30"]
    assert sum(a.shapley for a in report.attributions) == pytest.approx(0.0)  # efficiency
    hierarchy = attribution_end(events)["hierarchy"]
    assert hierarchy["suspect_ids"] == ["m30"] and hierarchy["reduced_exact"]
    assert sorted(m for b in hierarchy["blocks"] for m in b) == sorted(f"m{i}" for i in range(40))
    assert report.cost.evaluator_calls == len(evaluate.calls) <= 150
    assert "n/a" in report.to_table()  # unmeasured LOO effects render as n/a


@pytest.mark.parametrize("seed", range(6))
def test_both_partners_of_joint_harm_are_found(seed: int) -> None:
    """Two faults harmful only together: both are flagged even when one of them shares
    a block with the gold memory (the partner search), and clearing one recovers."""
    rng = np.random.default_rng(seed)
    k = 30
    gold, a, b = (f"m{p}" for p in rng.choice(k, size=3, replace=False))
    report = MeClearEngine(ClearanceConfig(seed=seed)).clear(
        make_memories(k), CountingEvaluator(joint(gold, {a, b}))
    )
    assert set(report.harmful_ids) == {a, b}
    assert len(report.cleared_ids) == 1 and report.recovered


def test_interactions_of_the_reduced_game_label_redundant_copies() -> None:
    config = ClearanceConfig(interactions=True)
    report = MeClearEngine(config).clear(
        make_memories(30), CountingEvaluator(redundant("m0", {"m10", "m20"}))
    )
    assert report.estimator == "hierarchical"
    assert [(p.memory_ids, p.label) for p in report.interactions] == [(("m10", "m20"), "redundant")]


def test_without_an_anchor_a_small_context_falls_back_to_flat_attribution() -> None:
    """Two blocks and no random anchor search: when the fault shares the gold memory's
    block no union of blocks recovers, and the context (K <= 24) is attributed flat."""
    config = ClearanceConfig(estimator=AutoShapley(anchor_samples=0, blocks=2))
    outcomes = set()
    for fault in (f"m{i}" for i in range(1, 12)):
        events: list[StageEvent] = []
        report = MeClearEngine(config, listener=events.append).clear(
            make_memories(12), CountingEvaluator(redundant("m0", {fault}))
        )
        assert report.cleared_ids == [fault] and report.recovered
        hierarchy = attribution_end(events)["hierarchy"]
        together = any({"m0", fault} <= set(block) for block in hierarchy["blocks"])
        assert hierarchy["flat_fallback"] == together
        outcomes.add(together)
    assert outcomes == {True, False}


def test_peak_engine_memory_at_k200_is_small() -> None:
    memories = make_memories(200)
    evaluate = CountingEvaluator(redundant("m7", {"m50", "m120", "m199"}))
    tracemalloc.start()
    try:
        report = MeClearEngine().clear(memories, evaluate)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert set(report.cleared_ids) == {"m50", "m120", "m199"}
    assert peak < 50 * 2**20


def test_scale_games_are_solved_within_the_call_targets() -> None:
    """One fault, two or three redundant copies: every game recovered with exactly the
    faults cleared, and the mean evaluator calls per faulty query within the targets
    (SIMULATED games; the sequential verification rule's trials included)."""
    families = [ScaleFamily("direct"), ScaleFamily("redundant", 2), ScaleFamily("redundant", 3)]
    for k, budget in ((10, 60), (50, 150), (200, 300)):
        calls = []
        for family in families:
            for case in scale_games(k, family, 3):
                report = MeClearEngine().clear(case.memories, case.evaluator())
                assert set(report.cleared_ids) == set(case.targets) and report.recovered
                calls.append(report.cost.evaluator_calls)
        assert sum(calls) / len(calls) <= budget


# ----------------------------------------------------------------------------- escalation
def _table_game(k: int) -> CoalitionGame:
    memories = tuple(Memory(id=f"m{i}", content=f"memory {i}") for i in range(k))
    return CoalitionGame(context=memories, trials=1)


def _run(game: CoalitionGame, value, search) -> list[list[int]]:
    """Drive an escalation search, evaluating its batches with ``value``."""
    try:
        batch = next(search)
        while True:
            for coalition, _ in batch:
                if not game.trials_of(coalition):
                    ids = frozenset(f"m{i}" for i in members(coalition))
                    game.store(coalition, [value(ids)])
            batch = search.send(None)
    except StopIteration as done:
        return done.value


def test_escalation_shrinks_the_negative_pool_to_the_copies() -> None:
    game, value = _table_game(8), redundant("m0", {"m2", "m5", "m6"})
    psi = [0.3, -0.01, -0.02, 0.0, -0.03, -0.04, 0.01, 0.0]  # m6 estimated above zero
    pools = [escalation_pool(psi, 12), wide_pool(psi, 24, (), 0.05)]
    assert pools[0] == [5, 4, 2, 1]
    found = _run(game, value, escalation_candidates(game, pools, lambda c: game.recovers(c, 1.0)))
    assert sorted(found[0]) == [2, 5, 6]  # the wide pool caught m6
    assert all(game.recovers(candidate_coalition(8, c), 1.0) for c in found)


def test_escalation_shrinks_joint_harm_one_by_one_and_stops_when_nothing_helps() -> None:
    game, value = _table_game(6), joint("m0", {"m1", "m2"})
    psi = [0.5, -0.2, -0.2, -0.01, 0.0, 0.0]
    found = _run(
        game,
        value,
        escalation_candidates(game, [escalation_pool(psi, 12)], lambda c: game.recovers(c, 1.0)),
    )
    assert [len(c) for c in found] == [1, 3] and set(found[0]) <= {1, 2}
    nothing = _table_game(4)
    search = escalation_candidates(nothing, [[1, 2, 3]], lambda c: nothing.recovers(c, 1.0))
    assert _run(nothing, lambda ids: 0.0, search) == []
    assert escalation_pool([0.1, -0.2], 12, suspects=[0]) == [0, 1]


# ----------------------------------------------------------------------------- embeddings
def test_embeddings_group_the_memories_when_given() -> None:
    """The framework's embedding vectors replace word similarity (one call per run)."""
    texts_seen: list[list[str]] = []

    def embed(texts):  # type: ignore[no-untyped-def]
        texts_seen.append(list(texts))
        return [[1.0, float(i % 3)] for i in range(len(texts))]

    memories = make_memories(20)
    report = MeClearEngine(embed=embed).clear(
        memories, CountingEvaluator(redundant("m2", {"m9", "m17"}))
    )
    assert set(report.cleared_ids) == {"m9", "m17"}
    assert texts_seen == [[m.content for m in memories]]
    clean = MeClearEngine(embed=embed).clear(memories, lambda c, t: 1.0)
    assert clean.early_exit and len(texts_seen) == 1  # no attribution, no embedding call


def test_a_broken_embedding_is_an_error_and_a_transient_one_falls_back() -> None:
    from meclear_integrations import ConfigurationError
    from meclear_integrations.core.errors import TransientError

    memories = make_memories(12)
    evaluate = CountingEvaluator(redundant("m0", {"m5"}))
    with pytest.raises(ConfigurationError, match="unusable vectors"):
        MeClearEngine(embed=lambda texts: [[1.0]]).clear(memories, evaluate)

    def flaky(texts):  # type: ignore[no-untyped-def]
        raise TransientError("embedding service timed out")

    assert MeClearEngine(embed=flaky).clear(memories, evaluate).cleared_ids == ["m5"]
