"""The sparse grouping gives the dense (quadratic) grouping's output exactly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meclear_integrations.core.grouping import (
    LINK_DF,
    lexical_graph,
    lexical_similarity,
)
from meclear_integrations.core.partition import similarity_order, spread_partition
from meclear_integrations.core.similarity_graph import SimilarityGraph
from tests.support import quadratic_grouping as old

_WORDS = [
    "alice",
    "ben",
    "oslo",
    "lisbon",
    "dog",
    "luna",
    "moved",
    "works",
    "nurse",
    "pilot",
    "chess",
    "spring",
]


@st.composite
def _texts(draw: st.DrawFn) -> list[str]:
    k = draw(st.integers(1, 24))
    return [
        " ".join(draw(st.lists(st.sampled_from(_WORDS), min_size=0, max_size=6))) for _ in range(k)
    ]


@st.composite
def _matrices(draw: st.DrawFn) -> np.ndarray:
    """Random similarities: sparse or dense, negative entries, asymmetric ones too."""
    k = draw(st.integers(1, 18))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    values = rng.choice([-0.5, 0.0, 0.0, 0.25, 0.5, 0.5, 1.0], size=(k, k))
    if draw(st.booleans()):
        values = np.triu(values) + np.triu(values, 1).T
    np.fill_diagonal(values, rng.choice([1.0, 0.5]))
    return values


@settings(max_examples=150, deadline=None)
@given(_texts())
def test_lexical_graph_is_the_dense_cosine_entry_for_entry(texts: list[str]) -> None:
    assert np.array_equal(lexical_graph(texts).dense(), old.lexical_similarity(texts))
    assert np.array_equal(lexical_similarity(texts), old.lexical_similarity(texts))


@settings(max_examples=200, deadline=None)
@given(
    _matrices(),
    st.integers(1, 6),
    st.integers(0, 2),
    st.integers(0, 2**31),
)
def test_spread_partition_matches_the_quadratic_one(
    matrix: np.ndarray, n_blocks: int, n_labelings: int, seed: int
) -> None:
    k = len(matrix)
    label_rng = np.random.default_rng(seed + 1)
    labelings = [label_rng.integers(0, 3, size=k).tolist() for _ in range(n_labelings)]
    expected = old.spread_partition(
        matrix,
        n_blocks,
        np.random.default_rng(seed),
        penalty=old.penalty_of(labelings, k) if labelings else None,
    )
    reference_rng = np.random.default_rng(seed)
    old.spread_partition(
        matrix,
        n_blocks,
        reference_rng,
        penalty=old.penalty_of(labelings, k) if labelings else None,
    )
    after = reference_rng.random(3)  # the generator is left where the reference leaves it
    for similarity in (matrix, SimilarityGraph.from_dense(matrix)):
        rng = np.random.default_rng(seed)
        got = spread_partition(similarity, n_blocks, rng, apart=labelings)
        assert got == expected
        assert np.array_equal(rng.random(3), after)
    # other bit generators are drawn from call by call: the same blocks
    other = old.spread_partition(
        matrix,
        n_blocks,
        np.random.Generator(np.random.MT19937(seed)),
        penalty=old.penalty_of(labelings, k) if labelings else None,
    )
    mt = np.random.Generator(np.random.MT19937(seed))
    assert spread_partition(matrix, n_blocks, mt, apart=labelings) == other


@settings(max_examples=200, deadline=None)
@given(_matrices(), st.integers(0, 2**31))
def test_similarity_order_matches_the_quadratic_one(matrix: np.ndarray, seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = len(matrix)
    positions = sorted(rng.choice(k, size=int(rng.integers(0, k + 1)), replace=False).tolist())
    expected = old.similarity_order(positions, matrix)
    assert similarity_order(positions, matrix) == expected
    assert similarity_order(positions, SimilarityGraph.from_dense(matrix)) == expected


def test_restrict_is_the_sub_matrix() -> None:
    matrix = np.random.default_rng(0).choice([0.0, 0.3, -0.2], size=(9, 9))
    positions = [7, 2, 5, 0]
    sub = SimilarityGraph.from_dense(matrix).restrict(positions).dense()
    expected = matrix[np.ix_(positions, positions)]
    assert np.array_equal(sub, expected)


def test_a_word_in_more_than_link_df_memories_links_none_of_them() -> None:
    k = LINK_DF + 2
    texts = [f"common unique{i}" for i in range(k - 2)] + ["rare common", "rare"]
    graph = lexical_graph(texts)
    assert graph.stored == 2  # only the two memories sharing "rare"
    dense = graph.dense()
    assert dense[k - 2, k - 1] > 0
    assert dense[0, 1] == 0.0
    assert old.lexical_similarity(texts)[0, 1] > 0  # the dense cosine linked them all
    assert np.array_equal(
        lexical_graph(texts[:LINK_DF]).dense(), old.lexical_similarity(texts[:LINK_DF])
    )


def test_stored_pairs_grow_linearly_with_k() -> None:
    def stored(k: int) -> int:
        texts = [f"shared topic{i % 7} person{i % 11} item{i}" for i in range(k)]
        return lexical_graph(texts).stored

    assert stored(2000) <= 2 * LINK_DF * 2 * 2000
    assert stored(2000) < 2000 * 2000 / 10


@pytest.mark.parametrize("k", [1, 2, 3])
def test_tiny_contexts(k: int) -> None:
    matrix = np.eye(k)
    assert spread_partition(matrix, 4, np.random.default_rng(0)) == old.spread_partition(
        matrix, 4, np.random.default_rng(0)
    )
    assert similarity_order(range(k), matrix) == list(range(k))


def test_a_frozen_context_graph_is_computed_once_and_read_only() -> None:
    """Recency and attribution share one lexical graph per frozen context; nobody edits it."""
    from meclear_integrations.core.grouping import memory_graph
    from meclear_integrations.core.memory import Memory

    context = tuple(Memory(id=f"m{i}", content=f"alice moved to city{i % 3}") for i in range(6))
    graph = memory_graph(context)
    assert memory_graph(context) is graph
    assert memory_graph(list(context)) is not graph  # a list may change: computed afresh
    assert np.array_equal(memory_graph(list(context)).dense(), graph.dense())
    with pytest.raises(ValueError):
        graph.data[:1] = 0.0


def test_symmetric_graph_is_the_graph_of_both_halves() -> None:
    """SimilarityGraph.symmetric stores each upper entry with its mirror, rows and columns."""
    rng = np.random.default_rng(3)
    k = 9
    upper = np.triu(rng.random((k, k)) * (rng.random((k, k)) < 0.4), 1)
    rows, cols = np.nonzero(upper)
    mirrored = upper[rows, cols] * 0.5  # mirrors may carry their own values
    graph = SimilarityGraph.symmetric(k, rows, cols, upper[rows, cols], mirrored)
    dense = upper.copy()
    dense[cols, rows] = mirrored
    np.fill_diagonal(dense, 1.0)
    reference = SimilarityGraph.from_dense(dense)
    assert np.array_equal(graph.dense(), dense)
    for name in ("indptr", "indices", "data", "t_indptr", "t_indices", "t_data"):
        assert np.array_equal(getattr(graph, name), getattr(reference, name)), name


def test_restrict_keeps_rows_and_columns_of_any_positions() -> None:
    """Sorted positions restrict rows and columns without a sort; any order matches too."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        k = int(rng.integers(1, 12))
        matrix = rng.random((k, k)) * (rng.random((k, k)) < 0.4)
        np.fill_diagonal(matrix, 1.0)
        graph = SimilarityGraph.from_dense(matrix)
        positions = rng.choice(k, size=int(rng.integers(1, k + 1)), replace=False).tolist()
        for chosen in (sorted(positions), positions):
            got = graph.restrict(chosen)
            expected = SimilarityGraph.from_dense(matrix[np.ix_(chosen, chosen)])
            for name in ("indptr", "indices", "data", "t_indptr", "t_indices", "t_data"):
                assert np.array_equal(getattr(got, name), getattr(expected, name)), name


@settings(max_examples=150, deadline=None)
@given(_matrices(), st.integers(1, 6), st.integers(0, 1), st.integers(0, 2**31))
def test_spread_partition_with_minus_infinite_similarities(
    matrix: np.ndarray, n_blocks: int, n_labelings: int, seed: int
) -> None:
    """With at most one labeling a memory's ties to a block are counted only when its score
    does not decide alone; a stored -inf (a placed neighbour that looks like none) or -0.0
    is no exception."""
    k = len(matrix)
    rng = np.random.default_rng(seed + 2)
    special = rng.choice([-np.inf, -0.0], size=matrix.shape)
    chosen = rng.random(matrix.shape) < 0.2
    np.fill_diagonal(chosen, False)  # similarities to another memory only
    matrix = np.where(chosen, special, matrix)
    labelings = [rng.integers(0, 3, size=k).tolist() for _ in range(n_labelings)]
    expected = old.spread_partition(
        matrix,
        n_blocks,
        np.random.default_rng(seed),
        penalty=old.penalty_of(labelings, k) if labelings else None,
    )
    for similarity in (matrix, SimilarityGraph.from_dense(matrix)):
        rng = np.random.default_rng(seed)
        assert spread_partition(similarity, n_blocks, rng, apart=labelings) == expected
