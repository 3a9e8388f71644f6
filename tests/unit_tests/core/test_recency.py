"""The recency candidate: the older of similar dated memories, verified, never trusted."""

from __future__ import annotations

import asyncio
from datetime import date, datetime, timedelta, timezone

import numpy as np
import pytest
from pydantic import ValidationError

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.recency import RecencyPrior, memory_time, recency_positions
from meclear_integrations.core.report import render_report
from tests.support.games import CountingEvaluator

RECENCY = RecencyPrior()


def context(correction: bool = False) -> list[Memory]:
    """The current statement, an older stale one, background; optionally a later correction."""
    memories = [
        Memory(
            id="stale",
            content="Alice Moreau is the chairperson of the Green Harbour Party.",
            metadata={"date": "2015-03-01"},
        ),
        Memory(
            id="current",
            content="Bruno Keller is the chairperson of the Green Harbour Party.",
            metadata={"date": "2021-06-10"},
        ),
        Memory(id="b0", content="The river fair opens in May.", metadata={"date": "2023-01-02"}),
        Memory(id="b1", content="Tickets for the museum cost ten euros.", metadata={}),
    ]
    if correction:
        memories[0] = Memory(
            id="correction",
            content="Correction: Alice Moreau is the chairperson of the Green Harbour Party.",
            metadata={"date": "2021-07-01"},
        )
    return memories


def stale_value(ids: frozenset[str]) -> float:
    """The current statement answers right unless the (more prominent) old one is present."""
    return 1.0 if "current" in ids and "stale" not in ids else 0.0


def corrected_value(ids: frozenset[str]) -> float:
    """The later "correction" is wrong: the answer is right only without it."""
    return 1.0 if "current" in ids and "correction" not in ids else 0.0


def clear(value, memories, recency: RecencyPrior | None = RECENCY, config=None):
    evaluate = CountingEvaluator(value)
    engine = MeClearEngine(config or ClearanceConfig(), recency=recency)
    return engine.clear(memories, evaluate), evaluate


def test_the_older_similar_memory_is_the_candidate() -> None:
    memories = context()
    similarity = np.array([[1, 0.6, 0, 0], [0.6, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=float)
    assert recency_positions(memories, similarity) == [0]
    # below the threshold nothing is compared; an undated memory is never in it
    assert recency_positions(memories, similarity, min_similarity=0.7) == []
    similarity[1, 3] = similarity[3, 1] = 0.9
    assert recency_positions(memories, similarity) == [0]


def test_similarity_groups_chain_and_the_newest_stays() -> None:
    days = ["2020-01-01", "2020-06-01", "2021-01-01", "2019-01-01"]
    memories = [
        Memory(id=f"m{i}", content=f"x {i}", metadata={"date": d}) for i, d in enumerate(days)
    ]
    similarity = np.eye(4)
    similarity[0, 1] = similarity[1, 0] = 0.5  # m0 ~ m1 ~ m2: one group, m2 newest
    similarity[1, 2] = similarity[2, 1] = 0.5
    assert recency_positions(memories, similarity) == [0, 1]  # oldest first
    with pytest.raises(ValueError, match="expected"):
        recency_positions(memories, np.eye(3))


def test_memory_time_reads_dates_and_zones() -> None:
    assert memory_time({"date": date(2020, 5, 1)}) == datetime(2020, 5, 1)
    zoned = datetime(2020, 5, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    assert memory_time({"when": zoned}, "when") == datetime(2020, 5, 1, 10)
    assert memory_time({"date": "2020-05-01T12:00:00Z"}) == datetime(2020, 5, 1, 12)
    assert memory_time({"date": "last spring"}) is None
    assert memory_time({"date": 2020}) is None
    assert memory_time({}) is None


def test_off_by_default() -> None:
    assert MeClearEngine().recency is None
    report, _ = clear(stale_value, context(), None)
    assert report.recency_ids == [] and report.clearance_search != "recency"
    assert report.cleared_ids == ["stale"]


def test_a_verified_recency_candidate_is_the_clearance_and_skips_attribution() -> None:
    _, cold_calls = clear(stale_value, context(), None)
    warm, warm_calls = clear(stale_value, context())
    assert warm.clearance_search == "recency"
    assert warm.cleared_ids == ["stale"] and warm.recovered
    assert warm.recency_ids == ["stale"]
    assert warm.attributions == []
    assert [c.family for c in warm.candidates] == ["nested", "recency"]
    assert len(warm_calls.calls) < len(cold_calls.calls)
    assert "recency candidate [stale] verified" in render_report(warm)


def test_a_wrong_newest_memory_is_not_kept_because_it_is_newer() -> None:
    """The later "correction" puts the right statement into C_r: verification refuses it."""
    report, _ = clear(corrected_value, context(correction=True))
    assert report.recency_ids == ["current"]  # the prior ordering pointed at the wrong one
    assert report.clearance_search != "recency"
    assert report.attributions  # attribution ran
    assert report.cleared_ids == ["correction"] and report.recovered
    assert "current" in report.kept_ids


def test_nothing_dated_changes_nothing() -> None:
    undated = [m.model_copy(update={"metadata": {}}) for m in context()]
    plain, plain_calls = clear(stale_value, undated, None)
    report, calls = clear(stale_value, undated)
    assert report.recency_ids == [] and report.cleared_ids == plain.cleared_ids
    assert sorted(calls.calls, key=repr) == sorted(plain_calls.calls, key=repr)


def test_a_recovering_context_exits_before_the_candidate() -> None:
    report, calls = clear(lambda ids: 1.0 if "current" in ids else 0.0, context())
    assert report.early_exit and report.recency_ids == []
    assert all(ids == frozenset(m.id for m in context()) for ids, _ in calls.calls)


def test_async_path_agrees() -> None:
    sync, _ = clear(stale_value, context())
    evaluate = CountingEvaluator(stale_value)
    report = asyncio.run(MeClearEngine(recency=RECENCY).aclear(context(), evaluate))
    assert report.clearance_search == "recency" and report.cleared_ids == sync.cleared_ids


def test_settings_are_checked() -> None:
    assert RecencyPrior.model_validate({"key": "when"}) == RecencyPrior(key="when")
    with pytest.raises(ValidationError):
        RecencyPrior(min_similarity=1.5)
    with pytest.raises(ValidationError):
        RecencyPrior.model_validate({"threshold": 0.3})


def test_shrink_puts_back_a_member_that_was_not_needed() -> None:
    """An older background memory that resembles a newer one rides along unless shrunk."""
    memories = [
        *context(),
        Memory(
            id="lookalike",
            content="The Green Harbour Party chairperson spoke at the congress.",
            metadata={"date": "2019-01-01"},
        ),
    ]
    plain, plain_calls = clear(stale_value, memories)
    assert plain.clearance_search == "recency"
    assert sorted(plain.cleared_ids) == ["lookalike", "stale"]
    shrunk, shrunk_calls = clear(stale_value, memories, RecencyPrior(shrink=True))
    assert shrunk.clearance_search == "recency" and shrunk.recovered
    assert shrunk.cleared_ids == ["stale"] and "lookalike" in shrunk.kept_ids
    assert shrunk.recency_ids == ["stale", "lookalike"]  # C_r as formed, oldest first
    assert len(shrunk_calls.calls) > len(plain_calls.calls)  # one verification per member


def test_a_higher_pass_rate_asks_the_candidate_for_more_trials() -> None:
    base, base_calls = clear(stale_value, context())
    strict, strict_calls = clear(stale_value, context(), RecencyPrior(recovery_rate=0.5))
    assert strict.clearance_search == base.clearance_search == "recency"
    assert strict.candidates[1].trials > base.candidates[1].trials
    assert len(strict_calls.calls) > len(base_calls.calls)


def _quadratic_recency(context, similarity, min_similarity):
    """The K x K reference: every dated pair compared (the former implementation)."""
    times = [memory_time(m.metadata) for m in context]
    dated = [i for i, t in enumerate(times) if t is not None]
    group = {i: i for i in dated}

    def root(i):
        while group[i] != i:
            i = group[i]
        return i

    for a, i in enumerate(dated):
        for j in dated[a + 1 :]:
            if similarity[i, j] >= min_similarity:
                group[root(i)] = root(j)
    said = {i: " ".join(m.content.casefold().split()) for i, m in enumerate(context)}
    older = [
        i
        for i in dated
        if any(root(j) == root(i) and times[j] > times[i] and said[j] != said[i] for j in dated)
    ]
    return sorted(older, key=lambda i: (times[i], i))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("min_similarity", [0.0, 0.2, 0.3, 0.6])
def test_sparse_recency_matches_the_quadratic_reference(seed: int, min_similarity: float) -> None:
    """C_r from the sparse graph equals every-pair comparison (dense and graph inputs)."""
    from meclear_integrations.core.grouping import memory_graph

    rng = np.random.default_rng(seed)
    words = [
        "alice",
        "bruno",
        "chair",
        "party",
        "harbour",
        "green",
        "oslo",
        "lima",
        "pilot",
        "nurse",
        "dog",
        "cat",
    ]
    k = int(rng.integers(2, 30))
    memories = []
    for i in range(k):
        text = " ".join(rng.choice(words, size=int(rng.integers(1, 5))))
        meta = {} if rng.random() < 0.2 else {"date": f"20{10 + int(rng.integers(0, 5))}-01-01"}
        memories.append(Memory(id=f"m{i}", content=text, metadata=meta))
    graph = memory_graph(tuple(memories))
    dense = graph.dense()
    expected = _quadratic_recency(memories, dense, min_similarity)
    assert recency_positions(memories, graph, min_similarity=min_similarity) == expected
    assert recency_positions(memories, dense, min_similarity=min_similarity) == expected
    # signed similarities (embeddings): a stored pair below 0 never links, even at 0.0
    signed = dense.copy()
    signed[0, -1] = signed[-1, 0] = -0.5
    expected = _quadratic_recency(memories, signed, min_similarity)
    assert recency_positions(memories, signed, min_similarity=min_similarity) == expected
