"""Partitions of the context by similarity: similar memories apart, or next to each other.

A similarity (``core.grouping``: lexical or the caller's embeddings) only ever decides
*which memories are tested together*, never a verdict.

- :func:`spread_partition` puts similar memories into *different* blocks. Used for the
  first level of attribution, whose block game must be able to keep the evidence for an
  answer while dropping the memories that contradict it: they are usually about the same
  thing, so they must not share a block.
- :func:`similarity_order` lists memories so that near-duplicates are adjacent. Used to
  cut a set under screening into contiguous sub-blocks, so that repeated copies of one
  stale claim fall into one sub-block and cost one test instead of one test each.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    import numpy as np
else:
    from .lazy import np

from .similarity_graph import SimilarityGraph

__all__ = ["Similarity", "as_graph", "similarity_order", "spread_partition"]

Similarity = Union["np.ndarray", SimilarityGraph]
"""A K x K similarity, dense or sparse (:class:`~.similarity_graph.SimilarityGraph`)."""


def as_graph(similarity: Similarity) -> SimilarityGraph:
    """``similarity`` as a sparse graph (a dense matrix's non-zero entries are stored).

    Args:
        similarity: the K x K similarity.

    Returns:
        The graph.
    """
    if isinstance(similarity, SimilarityGraph):
        return similarity
    return SimilarityGraph.from_dense(np.asarray(similarity, dtype=float))


def _subset_keys(labels: np.ndarray) -> np.ndarray:
    """keys[s, i]: memory i's labels on the labelings in subset s, as one integer."""
    p, k = labels.shape
    keys = np.zeros((1 << p, k), dtype=np.int64)
    for s in range(1, 1 << p):
        chosen = [q for q in range(p) if s >> q & 1]
        _, inverse = np.unique(labels[chosen].T, axis=0, return_inverse=True)
        keys[s] = inverse.ravel()
    return keys


def _strongest(graph: SimilarityGraph, labels: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Each memory's largest similarity + penalty to another memory (-1e9: no other)."""
    k, p = graph.k, len(labels)
    subsets = 1 << p
    rows = np.repeat(np.arange(k), np.diff(graph.indptr))
    bits = np.zeros(len(rows), dtype=np.int64)
    for q in range(p):
        bits |= (labels[q, rows] == labels[q, graph.indices]).astype(np.int64) << q
    popcount = np.array([s.bit_count() for s in range(subsets)], dtype=float)
    out = np.full(k, -1e9)
    linked = np.flatnonzero(np.diff(graph.indptr))  # rows come in order: one max per row
    if len(linked):
        scores = graph.data + popcount[bits]
        out[linked] = np.maximum(out[linked], np.maximum.reduceat(scores, graph.indptr[linked]))
    for s in range(subsets):  # pairs not stored: similarity 0, penalty |s| when they agree
        same_key = np.bincount(keys[s], minlength=k)[keys[s]] - 1
        linked = np.bincount(rows[(bits & s) == s], minlength=k)
        out = np.where(same_key - linked > 0, np.maximum(out, popcount[s]), out)
    return out


def spread_partition(
    similarity: Similarity,
    n_blocks: int,
    rng: np.random.Generator,
    *,
    apart: Sequence[Sequence[int]] = (),
) -> list[list[int]]:
    """Split positions 0..K-1 into ``n_blocks`` blocks, similar memories apart.

    Split positions 0..K-1 into ``n_blocks`` blocks of near-equal size (sizes differ by
    at most one) so that similar memories land in different blocks.

    Greedy anti-clustering: memories are placed most-similar-to-something first (ties in a
    random order); each goes to the open block whose most similar member is least similar
    to it, then to the emptier block, then at random. ``apart`` holds labelings (one label
    per memory, e.g. the blocks of an earlier partition): two memories with the same label
    in n of them are n more similar, which pushes apart pairs that must not meet again.
    Blocks are returned in the order of their smallest position.

    Works on the stored pairs of a sparse similarity (a pair not stored is 0): placing a
    memory updates only its neighbours, and the labelings are counted per block, so the
    cost grows with the pairs stored and K, not K^2. A dense matrix gives the same blocks.

    Args:
        similarity: the K x K similarity (dense or :class:`SimilarityGraph`).
        n_blocks: the number of blocks.
        rng: breaks ties.
        apart: labelings whose equal labels are kept apart.

    Returns:
        The blocks, each a list of positions.
    """
    graph = as_graph(similarity)
    k = graph.k
    n_blocks = max(1, min(n_blocks, k))
    labels = np.asarray(apart, dtype=np.int64).reshape(-1, k)
    p = len(labels)
    subsets = 1 << p
    keys = _subset_keys(labels)
    popcount = np.array([s.bit_count() for s in range(subsets)], dtype=float)
    strongest = _strongest(graph, labels, keys)
    tie_break = rng.random(k)
    order = np.lexsort((tie_break, -strongest)).tolist()  # strongest first, ties at random
    capacity = [k // n_blocks + (1 if b < k % n_blocks else 0) for b in range(n_blocks)]
    rng.shuffle(capacity)
    blocks: list[list[int]] = [[] for _ in range(n_blocks)]
    # column entries: the rows linked to memory j, their score to j (similarity + the
    # labelings they share with j) and which labelings they share (a bit each)
    t_rows = graph.t_indices
    t_columns = np.repeat(np.arange(k), np.diff(graph.t_indptr))
    t_bits = np.zeros(len(t_rows), dtype=np.int64)
    for q in range(p):
        t_bits |= (labels[q, t_rows] == labels[q, t_columns]).astype(np.int64) << q
    t_score = graph.t_data + popcount[t_bits] if p else graph.t_data
    bounds = graph.t_indptr.tolist()
    # closest[i, b]: the largest score of i to a member of b it has a stored pair with;
    # linked[i, s, b]: those members that share i's labels on subset s (a row per memory:
    # one read per decision); present[b][s]: key -> the members of b whose labels on
    # subset s make ``key``
    closest = np.full((k, n_blocks), -np.inf)
    # with at most one labeling, linked[i, :, b] only matters when i's score to b does not
    # decide alone: then it is counted from i's row (_Ties) instead of being kept up to
    # date at every placement
    pushed = p > 1
    linked = np.zeros((k, subsets, n_blocks) if pushed else (0, subsets, n_blocks))
    flat_closest, flat_linked = closest.reshape(-1), linked.reshape(-1)  # views: take/put
    at_closest = t_rows * n_blocks  # + b: entry (row, b) of the flat arrays
    at_linked = (
        [t_rows * (subsets * n_blocks) + s * n_blocks for s in range(subsets)] if pushed else []
    )
    # a stored -inf would hide a placed neighbour behind the "no neighbour" score
    hidden = not pushed and bool(np.isneginf(graph.data).any())
    counted = None if pushed else _Ties(graph, labels, n_blocks)
    shares = [(t_bits & s) == s for s in range(subsets)] if pushed else []
    present: list[list[dict[int, int]]] = [[{} for _ in range(subsets)] for _ in range(n_blocks)]
    by_penalty = sorted(range(subsets), key=lambda s: -s.bit_count())
    key_rows = keys.T.tolist()
    popcount_list = popcount.tolist()
    negative = -np.inf
    open_blocks = [b for b in range(n_blocks) if capacity[b] > 0]
    sizes = [0] * n_blocks
    draws = _Draws(rng, k * n_blocks)
    for i in order:
        draw = draws.take(len(open_blocks))
        near = closest[i].tolist()
        best: tuple[float, int, float] | None = None
        chosen = -1
        if p == 0:
            for b, d in zip(open_blocks, draw, strict=True):
                # near[b] if every member of b is a stored neighbour, else max(near[b], 0)
                near_b = near[b]
                if near_b >= 0.0 or near_b != near_b:  # both are near[b]
                    value = near_b
                elif near_b == negative and not hidden:  # no stored neighbour placed in b
                    value = near_b if sizes[b] == 0 else 0.0
                else:
                    assert counted is not None
                    value = near_b if sizes[b] == counted.of(i)[0][b] else 0.0
                candidate = (value, sizes[b], d)
                if best is None or candidate < best:
                    best, chosen = candidate, b
        elif p == 1:  # one labeling (the partner search): subsets 1, then 0 (no dicts)
            assert counted is not None
            label = key_rows[i][1]
            for b, d in zip(open_blocks, draw, strict=True):
                # the penalty to a member of b without a stored pair: 1 when one shares the
                # label, else 0 when there is one; counted only when it can beat near[b]
                near_b = near[b]
                same = present[b][1].get(label, 0)
                if near_b >= 1.0 or (not same and near_b >= 0.0):  # no penalty beats it
                    value = near_b
                elif near_b == negative and not hidden:  # no stored neighbour placed in b
                    value = 1.0 if same else (0.0 if sizes[b] else negative)
                else:
                    ties0, ties1 = counted.of(i)
                    if same > ties1[b]:
                        loose = popcount_list[1]
                    elif sizes[b] > ties0[b]:
                        loose = popcount_list[0]
                    else:
                        loose = negative
                    value = near_b if near_b > loose else loose
                candidate = (value, sizes[b], d)
                if best is None or candidate < best:
                    best, chosen = candidate, b
        else:
            ties = linked[i].tolist()
            key = key_rows[i]
            for b, d in zip(open_blocks, draw, strict=True):
                # the largest penalty to a member of b it has no stored pair with
                loose = negative
                for s in by_penalty:
                    if present[b][s].get(key[s], 0) > ties[s][b]:
                        loose = popcount_list[s]
                        break
                candidate = (max(near[b], loose), sizes[b], d)
                if best is None or candidate < best:
                    best, chosen = candidate, b
        sizes[chosen] += 1
        blocks[chosen].append(i)
        if counted is not None:
            counted.place(i, chosen)
        if sizes[chosen] == capacity[chosen]:
            open_blocks.remove(chosen)
        lo, hi = bounds[i], bounds[i + 1]
        if hi > lo:
            where = at_closest[lo:hi] + chosen
            flat_closest.put(where, np.maximum(flat_closest.take(where), t_score[lo:hi]))
        if hi > lo and pushed:
            where = at_linked[0][lo:hi] + chosen
            flat_linked.put(where, flat_linked.take(where) + 1.0)
            for s in range(1, subsets):
                where = at_linked[s][lo:hi][shares[s][lo:hi]] + chosen
                flat_linked.put(where, flat_linked.take(where) + 1.0)
        if p:
            key = key_rows[i]
            for s in range(subsets):
                counts = present[chosen][s]
                counts[key[s]] = counts.get(key[s], 0) + 1
    draws.close()
    return sorted((sorted(b) for b in blocks), key=lambda b: b[0])


class _Ties:
    """Memory i's stored neighbours placed in each block, counted from its row on demand.

    For :func:`spread_partition` with at most one labeling: ``of(i)`` is (the placed stored
    neighbours of i per block, those sharing i's label per block) as the blocks stand; the
    memory last counted is remembered (one decision reads several blocks).
    """

    def __init__(self, graph: SimilarityGraph, labels: np.ndarray, n_blocks: int) -> None:
        self.graph = graph
        self.bounds = graph.indptr.tolist()
        self.n_blocks = n_blocks
        self.block = np.full(graph.k, -1, dtype=np.int64)  # -1: not placed yet
        self.labels = labels
        self.shared: np.ndarray | None = None  # per row entry: the label is the same
        self.last: tuple[int, list[int], list[int]] = (-1, [], [])

    def place(self, i: int, block: int) -> None:
        """Memory i went to ``block``."""
        self.block[i] = block

    def of(self, i: int) -> tuple[list[int], list[int]]:
        """(placed stored neighbours of i per block, those that share i's label)."""
        if self.last[0] == i:
            return self.last[1], self.last[2]
        graph, lo, hi = self.graph, self.bounds[i], self.bounds[i + 1]
        where = self.block[graph.indices[lo:hi]] + 1  # 0: not placed
        width = self.n_blocks + 1
        ties0 = np.bincount(where, minlength=width)[1:].tolist()
        ties1 = [0] * self.n_blocks
        if len(self.labels):
            if self.shared is None:
                rows = np.repeat(np.arange(graph.k), np.diff(graph.indptr))
                label = self.labels[0]
                self.shared = label[rows] == label[graph.indices]
            ties1 = np.bincount(where[self.shared[lo:hi]], minlength=width)[1:].tolist()
        self.last = (i, ties0, ties1)
        return ties0, ties1


class _Draws:
    """``rng.random(n)`` drawn in one batch, with the generator left where n-by-n draws leave it.

    A PCG64 generator's doubles are consecutive outputs, so one batch of uniforms read in
    slices is the same sequence as one call per slice; :meth:`close` moves the generator to
    just after the numbers taken. Other bit generators are drawn from call by call.
    """

    def __init__(self, rng: np.random.Generator, most: int) -> None:
        self.rng = rng
        self.bits = rng.bit_generator
        self.batched = type(self.bits) is np.random.PCG64
        self.taken = 0
        if self.batched:
            self.state = self.bits.state
            self.numbers: list[float] = rng.random(most).tolist()

    def take(self, n: int) -> list[float]:
        """The next ``n`` uniforms in [0, 1)."""
        if not self.batched:
            return [float(x) for x in self.rng.random(n)]
        out = self.numbers[self.taken : self.taken + n]
        self.taken += n
        return out

    def close(self) -> None:
        """Leave the generator just after the numbers taken."""
        if self.batched:
            self.bits.state = self.state
            self.bits.advance(self.taken)  # type: ignore[attr-defined]


def similarity_order(positions: Sequence[int], similarity: Similarity) -> list[int]:
    """``positions`` ordered as a nearest-neighbour chain.

    ``positions`` as a nearest-neighbour chain: start from the member with the most
    similar partner, then repeatedly append the unvisited member most similar to the last
    one (ties by position), so near-duplicates end up adjacent. Walks the stored pairs of
    a sparse similarity (a pair not stored is 0); a dense matrix gives the same order.

    Args:
        positions: the positions to order.
        similarity: the K x K similarity (dense or :class:`SimilarityGraph`).

    Returns:
        The positions, similar ones adjacent.
    """
    remaining = sorted(positions)
    n = len(remaining)
    if n <= 2:
        return remaining
    whole = as_graph(similarity)
    everything = n == whole.k and remaining[-1] == n - 1  # distinct positions 0..K-1
    graph = whole if everything else whole.restrict(remaining)
    degree = np.diff(graph.indptr)
    rows = np.repeat(np.arange(n), degree)
    start = graph.diagonal - 2.0
    np.maximum.at(start, rows, graph.data)
    start = np.where(degree < n - 1, np.maximum(start, 0.0), start)
    current = int(np.argmax(start))
    chain = [current]
    unvisited = np.ones(n, dtype=bool)
    unvisited[current] = False
    waiting = [j for j in range(n) if j != current]  # the unvisited, ascending
    bounds, indices, data = graph.indptr.tolist(), graph.indices, graph.data
    while len(chain) < n:
        lo, hi = bounds[current], bounds[current + 1]
        cols, values = indices[lo:hi], data[lo:hi]
        open_ = unvisited[cols]
        cols, values = cols[open_], values[open_]
        near = int(np.argmax(values)) if len(cols) else -1
        # the first unvisited member without a stored pair with the current one: the
        # linked unvisited are an ascending sub-list of ``waiting``, so it is where the
        # two lists first differ
        linked = cols.tolist()
        far = next(
            (j for j, other in zip(waiting, linked, strict=False) if j != other),
            waiting[len(linked)] if len(waiting) > len(linked) else -1,
        )
        if near < 0:
            current = far
        elif far < 0:
            current = linked[near]
        else:
            value, col = float(values[near]), linked[near]
            current = col if value > 0.0 or (value == 0.0 and col < far) else far
        unvisited[current] = False
        del waiting[bisect.bisect_left(waiting, current)]
        chain.append(current)
    return [remaining[j] for j in chain]
