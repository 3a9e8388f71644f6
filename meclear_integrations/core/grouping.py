"""Similarity between memories; grouping by similarity and by the answer supported.

Similarity is the cosine of TF-IDF word vectors computed over the context (lexical), or of
caller-supplied embedding vectors (the framework's own embedding model,
:func:`memory_similarity`). It is only ever
used to decide *which memories are tested together*: a grouping never decides a verdict,
so a memory whose text imitates another one can change what is tested, never what is
verified.

- :func:`spread_partition` puts similar memories into *different* blocks. Used for the
  first level of attribution, whose block game must be able to keep the evidence for an
  answer while dropping the memories that contradict it: they are usually about the same
  thing, so they must not share a block.
- :func:`similarity_order` lists memories so that near-duplicates are adjacent. Used to
  cut a set under screening into contiguous sub-blocks, so that repeated copies of one
  stale claim fall into one sub-block and cost one test instead of one test each.

:func:`answer_group` groups memories by the answer they support alone (from singletons
already evaluated, with the answers the evaluator reported, ``core.answers``): the
memories that alone give the answer the full context failed with. Unlike similarity, it
feeds candidates, which are verified like any other (``core.stages.clearance``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence

import numpy as np

from .answers import plain_same
from .errors import ConfigurationError
from .faults import exception_chain, is_transient
from .game import CoalitionGame
from .memory import Memory
from .redaction import redact

logger = logging.getLogger(__name__)

Embedder = Callable[[Sequence[str]], Sequence[Sequence[float]]]
"""texts -> one vector per text (the framework's embedding model, or stored vectors)."""

__all__ = [
    "Embedder",
    "answer_group",
    "cosine_similarity",
    "failing_answers",
    "lexical_similarity",
    "memory_similarity",
    "silent_answers",
    "similarity_order",
    "spread_partition",
    "supports_answer",
]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOPWORD_TEXT = (
    "a an the and or but of to in on at by for from with about as is are was were be been "
    "being it its this that these those he she they them his her their we our you your i "
    "me my has have had do does did not no so than then there here also just very"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _tokens(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


def lexical_similarity(texts: Sequence[str]) -> np.ndarray:
    """Cosine similarity (K x K, diagonal 1) of TF-IDF word vectors over ``texts``.

    Words are lower-cased alphanumeric runs without a short stop-word list; a word counted
    n times weighs (1 + log n) (log((1 + K) / (1 + df)) + 1), with its document frequency
    df over the context itself. Products are accumulated word by word over the documents
    sharing the word (no dense K x vocabulary product). A text without words is similar to
    nothing (row and column 0, diagonal 1).

    Args:
        texts: the memory texts.

    Returns:
        The K x K similarity.
    """
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
    # (word, document) pairs with their counts, grouped by word
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


def memory_similarity(memories: Sequence[Memory], embed: Embedder | None = None) -> np.ndarray:
    """K x K similarity of the memories: cosine of ``embed``'s vectors, else lexical.

    A transient embedding failure (a timeout, a rate limit) falls back to lexical
    similarity with a warning: similarity only orders what is tested together. Anything
    else (an exception that retrying cannot heal, a wrong number or shape of vectors) is
    a configuration error raised at once.

    Args:
        memories: the context.
        embed: texts -> vectors (None: lexical similarity).

    Returns:
        The K x K similarity.

    Raises:
        ConfigurationError: ``embed`` returned vectors of the wrong shape.
    """
    texts = [m.content for m in memories]
    if embed is None:
        return lexical_similarity(texts)
    try:
        vectors = embed(texts)
    except Exception as exc:
        if any(is_transient(e) for e in exception_chain(exc)):
            logger.warning(
                "embedding failed (%s); grouping memories by word similarity instead",
                redact(f"{type(exc).__name__}: {exc}")[:300],
            )
            return lexical_similarity(texts)
        raise ConfigurationError(f"the embed function failed: {type(exc).__name__}") from exc
    try:
        matrix = np.asarray(vectors, dtype=float)
        if matrix.ndim != 2 or len(matrix) != len(texts):
            raise ConfigurationError(f"expected {len(texts)} vectors, got shape {matrix.shape}")
        return cosine_similarity(matrix)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"the embed function returned unusable vectors: {exc}") from exc


def cosine_similarity(vectors: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """Cosine similarity of the rows of ``vectors`` (zero rows are similar to nothing).

    Args:
        vectors: one row per memory.

    Returns:
        The K x K similarity.

    Raises:
        ConfigurationError: not a finite 2-D array.
    """
    matrix = np.asarray(vectors, dtype=float)
    if matrix.ndim != 2 or not np.all(np.isfinite(matrix)):
        raise ConfigurationError(
            "embedding vectors must be a finite 2-D array (one row per memory)"
        )
    norms = np.linalg.norm(matrix, axis=1)
    unit = matrix / np.where(norms > 0, norms, 1.0)[:, None]
    similarity = np.clip(unit @ unit.T, -1.0, 1.0)
    np.fill_diagonal(similarity, 1.0)
    return similarity


def spread_partition(
    similarity: np.ndarray,
    n_blocks: int,
    rng: np.random.Generator,
    *,
    penalty: np.ndarray | None = None,
) -> list[list[int]]:
    """Split positions 0..K-1 into ``n_blocks`` blocks, similar memories apart.

    Split positions 0..K-1 into ``n_blocks`` blocks of near-equal size (sizes differ by
    at most one) so that similar memories land in different blocks.

    Greedy anti-clustering: memories are placed most-similar-to-something first (ties in a
    random order); each goes to the open block whose most similar member is least similar
    to it, then to the emptier block, then at random. ``penalty`` (K x K, added to the
    similarity) pushes apart pairs that must not meet again, e.g. members of a block of an
    earlier partition. Blocks are returned in the order of their smallest position.

    Args:
        similarity: the K x K similarity.
        n_blocks: the number of blocks.
        rng: breaks ties.
        penalty: extra similarity, e.g. former block mates to keep apart.

    Returns:
        The blocks, each a list of positions.
    """
    k = len(similarity)
    n_blocks = max(1, min(n_blocks, k))
    score = similarity if penalty is None else similarity + penalty
    off_diagonal = score - np.diag(np.diag(score)) - np.eye(k) * 1e9
    tie_break = rng.random(k)
    order = sorted(range(k), key=lambda i: (-off_diagonal[i].max(initial=-1e9), tie_break[i]))
    capacity = [k // n_blocks + (1 if b < k % n_blocks else 0) for b in range(n_blocks)]
    rng.shuffle(capacity)
    blocks: list[list[int]] = [[] for _ in range(n_blocks)]
    closest = np.full((k, n_blocks), -np.inf)  # closest[i, b]: max score of i to block b
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
    """``positions`` ordered as a nearest-neighbour chain.

    ``positions`` as a nearest-neighbour chain: start from the member with the most
    similar partner, then repeatedly append the unvisited member most similar to the last
    one (ties by position), so near-duplicates end up adjacent.

    Args:
        positions: the positions to order.
        similarity: the K x K similarity.

    Returns:
        The positions, similar ones adjacent.
    """
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


def failing_answers(game: CoalitionGame, threshold: float) -> list[str]:
    """The answers of the full context's trials that failed (distinct, first seen first).

    Args:
        game: the coalition table.
        threshold: the success threshold of one trial.

    Returns:
        The answers (empty when none failed or none was reported).
    """
    scores = game.scores.get(game.full, ())
    answers = game.answers_of(game.full)
    out: list[str] = []
    for score, answer in zip(scores, answers, strict=False):
        if answer is not None and score < threshold and answer not in out:
            out.append(answer)
    return out


def silent_answers(game: CoalitionGame) -> list[str]:
    """The answers on the empty context (what the agent says from no memory).

    Args:
        game: the coalition table.

    Returns:
        The answers reported for the empty coalition (empty when not evaluated).
    """
    return [a for a in game.answers_of(0) if a is not None]


def supports_answer(
    game: CoalitionGame, position: int, answers: Sequence[str], threshold: float
) -> str | None:
    """The answer of ``answers`` the memory at ``position`` gives alone, or None.

    Every trial of the memory alone must fail, agree (the evaluator's answer equivalence)
    with one of ``answers``, and not be the no-memory answer.

    Args:
        game: the coalition table (the singleton and the empty coalition evaluated).
        position: the memory's position.
        answers: the answers looked for (e.g. :func:`failing_answers`).
        threshold: the success threshold of one trial.

    Returns:
        The first of ``answers`` it agrees with, or None.
    """
    single = 1 << position
    scores = game.scores.get(single, ())
    given = game.answers_of(single)
    silent = silent_answers(game)
    if not scores or not silent or len(given) < len(scores):
        return None
    same = game.same or plain_same
    matched: str | None = None
    for score, answer in zip(scores, given, strict=True):
        if answer is None or score >= threshold or any(same(answer, s) for s in silent):
            return None
        match = next((a for a in answers if same(answer, a)), None)
        if match is None:
            return None
        matched = matched or match
    return matched


def answer_group(game: CoalitionGame, threshold: float) -> list[int]:
    """Memories that alone give an answer the full context failed with (the harm's group).

    Groups memories by the answer they support (their answer alone) instead of by a
    marginal value: under redundancy (Theorem 1) every copy of a harmful claim has
    d_i = 0 and psi_i = -Delta / r, shrinking as copies multiply, but each copy alone
    still gives the harmful answer. Uses only coalitions already in the table (the
    singletons and the empty context); empty when the failing answer is the no-memory
    answer (a failure by abstention says nothing about a memory) or answers were not
    reported.

    Args:
        game: the coalition table.
        threshold: the success threshold of one trial.

    Returns:
        The positions, in retrieval order.
    """
    harmful = failing_answers(game, threshold)
    silent = silent_answers(game)
    same = game.same or plain_same
    if not harmful or not silent or any(same(h, s) for h in harmful for s in silent):
        return []
    return [i for i in range(game.k) if supports_answer(game, i, harmful, threshold) is not None]
