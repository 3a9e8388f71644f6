"""The dense K x K grouping the sparse one replaced (reference for property tests).

Verbatim from ``core.grouping`` before similarity became a sparse graph: the TF-IDF
cosine accumulated into a K x K matrix, the greedy anti-clustering with a K x K penalty,
and the nearest-neighbour chain over a dense sub-matrix.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from meclear_integrations.core.grouping import _tokens


def lexical_similarity(texts: Sequence[str]) -> np.ndarray:
    """The dense TF-IDF cosine (every word links the memories sharing it)."""
    k = len(texts)
    vocabulary: dict[str, int] = {}
    rows: list[int] = []
    columns: list[int] = []
    for i, text in enumerate(texts):
        for word in _tokens(text):
            rows.append(i)
            columns.append(vocabulary.setdefault(word, len(vocabulary)))
    order = np.lexsort((np.asarray(rows, dtype=int), np.asarray(columns, dtype=int)))
    docs = np.asarray(rows, dtype=int)[order]
    words = np.asarray(columns, dtype=int)[order]
    pair_keys = words * max(k, 1) + docs
    unique_keys, counts = np.unique(pair_keys, return_counts=True)
    pair_words, pair_docs = np.divmod(unique_keys, max(k, 1))
    starts = np.flatnonzero(np.r_[True, pair_words[1:] != pair_words[:-1]])
    df = np.diff(np.r_[starts, len(pair_words)])
    idf = np.log((1 + k) / (1 + df)) + 1.0
    weights = (1.0 + np.log(counts)) * np.repeat(idf, df)
    squares = np.bincount(pair_docs, weights=weights * weights, minlength=k)
    similarity = np.zeros((k, k))
    for start, n in zip(starts[df > 1], df[df > 1], strict=True):
        members_, w = pair_docs[start : start + n], weights[start : start + n]
        similarity[np.ix_(members_, members_)] += np.outer(w, w)
    norms = np.sqrt(squares)
    scale = np.where(norms > 0, norms, 1.0)
    similarity = np.clip(similarity / scale[:, None] / scale[None, :], -1.0, 1.0)
    np.fill_diagonal(similarity, 1.0)
    return similarity


def spread_partition(
    similarity: np.ndarray,
    n_blocks: int,
    rng: np.random.Generator,
    *,
    penalty: np.ndarray | None = None,
) -> list[list[int]]:
    """The dense greedy anti-clustering."""
    k = len(similarity)
    n_blocks = max(1, min(n_blocks, k))
    score = similarity if penalty is None else similarity + penalty
    off_diagonal = score - np.diag(np.diag(score)) - np.eye(k) * 1e9
    tie_break = rng.random(k)
    order = sorted(range(k), key=lambda i: (-off_diagonal[i].max(initial=-1e9), tie_break[i]))
    capacity = [k // n_blocks + (1 if b < k % n_blocks else 0) for b in range(n_blocks)]
    rng.shuffle(capacity)
    blocks: list[list[int]] = [[] for _ in range(n_blocks)]
    closest = np.full((k, n_blocks), -np.inf)
    for i in order:
        open_blocks = [b for b in range(n_blocks) if len(blocks[b]) < capacity[b]]
        draw = rng.random(len(open_blocks))
        best = min(
            range(len(open_blocks)),
            key=lambda j: (closest[i, open_blocks[j]], len(blocks[open_blocks[j]]), draw[j]),
        )
        chosen = open_blocks[best]
        blocks[chosen].append(i)
        np.maximum(closest[:, chosen], score[:, i], out=closest[:, chosen])
    return sorted((sorted(b) for b in blocks), key=lambda b: b[0])


def similarity_order(positions: Sequence[int], similarity: np.ndarray) -> list[int]:
    """The dense nearest-neighbour chain."""
    remaining = sorted(positions)
    if len(remaining) <= 2:
        return remaining
    sub = similarity[np.ix_(remaining, remaining)] - 2.0 * np.eye(len(remaining))
    current = int(np.argmax(sub.max(axis=1)))
    chain = [current]
    visited = np.zeros(len(remaining), dtype=bool)
    visited[current] = True
    while len(chain) < len(remaining):
        row = np.where(visited, -np.inf, sub[current])
        current = int(np.argmax(row))
        visited[current] = True
        chain.append(current)
    return [remaining[j] for j in chain]


def penalty_of(labelings: Sequence[Sequence[int]], k: int) -> np.ndarray:
    """The K x K penalty of labelings: +1 per labeling in which two memories agree."""
    penalty = np.zeros((k, k))
    for labels in labelings:
        array = np.asarray(labels)
        penalty += np.asarray(array[:, None] == array[None, :], dtype=float)
    return penalty
