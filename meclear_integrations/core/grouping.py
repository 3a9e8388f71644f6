"""Similarity between memories; grouping by similarity and by the answer supported.

Similarity is the cosine of TF-IDF word vectors computed over the context (lexical), or of
caller-supplied embedding vectors (the framework's own embedding model,
:func:`memory_similarity`). It is only ever
used to decide *which memories are tested together*: a grouping never decides a verdict,
so a memory whose text imitates another one can change what is tested, never what is
verified.

The partitions that use it (similar memories apart, or next to each other) are in
``core.partition``.

:func:`answer_group` groups memories by the answer they support alone (from singletons
already evaluated, with the answers the evaluator reported, ``core.answers``): the
memories that alone give the answer the full context failed with. Unlike similarity, it
feeds candidates, which are verified like any other (``core.stages.clearance``).
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Callable, Generator, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
else:
    from .lazy import np

from .answers import plain_same
from .errors import ConfigurationError
from .failures.faults import exception_chain, is_transient
from .game import Coalition, CoalitionGame, from_positions
from .memory import Memory
from .partition import Similarity, similarity_order
from .redaction import redact
from .similarity_graph import SimilarityGraph
from .stopwords import LINK_STOPWORDS

logger = logging.getLogger(__name__)

Embedder = Callable[[Sequence[str]], Sequence[Sequence[float]]]
"""texts -> one vector per text (the framework's embedding model, or stored vectors)."""

__all__ = [
    "GROUP_SEARCH_FROM",
    "LINK_DF",
    "Embedder",
    "GroupSearch",
    "answer_group",
    "answer_group_search",
    "carries_answer",
    "cosine_similarity",
    "failing_answers",
    "lexical_graph",
    "lexical_similarity",
    "memory_graph",
    "memory_similarity",
    "silent_answers",
    "supports_answer",
]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
LINK_DF = 64
"""A word found in more memories than this links none of them (it still weighs in their
norms): a word that common says little about which memories repeat each other, and its
links would cost K^2 pairs. Contexts of at most this many memories are unaffected."""


def _tokens(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in LINK_STOPWORDS]


def lexical_graph(texts: Sequence[str]) -> SimilarityGraph:
    """Cosine similarity of TF-IDF word vectors over ``texts``, as a sparse graph.

    Words are lower-cased alphanumeric runs without a short stop-word list; a word counted
    n times weighs (1 + log n) (log((1 + K) / (1 + df)) + 1), with its document frequency
    df over the context itself. Only memories that share a word found in at most
    :data:`LINK_DF` of them are linked: products are accumulated word by word over the
    documents sharing the word (no K x K matrix, no dense K x vocabulary product), so the
    pairs stored grow as K times the words per memory, not as K^2. A text without words is
    similar to nothing.

    Args:
        texts: the memory texts.

    Returns:
        The similarity (diagonal 1).
    """
    k = len(texts)
    tokens = [_cached_tokens(text) for text in texts]
    vocabulary: dict[str, int] = {}
    flat = [vocabulary.setdefault(w, len(vocabulary)) for words in tokens for w in words]
    rows = np.repeat(np.arange(k, dtype=np.int64), [len(words) for words in tokens])
    # (word, document) pairs with their counts, grouped by word (one sort)
    pair_keys = np.asarray(flat, dtype=np.int64) * max(k, 1) + rows
    if len(vocabulary) * max(k, 1) <= np.iinfo(np.int32).max:  # a cheaper sort, same keys
        pair_keys = pair_keys.astype(np.int32)
    unique_keys, counts = np.unique(pair_keys, return_counts=True)
    unique_keys = unique_keys.astype(np.int64)
    pair_words, pair_docs = np.divmod(unique_keys, max(k, 1))
    starts = np.flatnonzero(np.r_[True, pair_words[1:] != pair_words[:-1]])
    df = np.diff(np.r_[starts, len(pair_words)])
    idf = np.log((1 + k) / (1 + df)) + 1.0
    weights = (1.0 + np.log(counts)) * np.repeat(idf, df)
    squares = np.bincount(pair_docs, weights=weights * weights, minlength=k)
    norms = np.sqrt(squares)
    scale = np.where(norms > 0, norms, 1.0)
    # every pair of documents sharing a word, word by word, lower position first (products
    # summed in word order: the same sums as a dense accumulation; the graph is symmetric)
    linking = (df > 1) & (df <= LINK_DF)
    shared_starts, shared_df = starts[linking], df[linking]
    sizes = shared_df * shared_df
    total = int(sizes.sum())
    if total == 0:
        empty = np.zeros(0, dtype=np.int64)
        return SimilarityGraph.from_entries(k, empty, empty, np.zeros(0))
    group = np.repeat(np.arange(len(sizes)), sizes)
    within = np.arange(total) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    n = shared_df[group]
    first = shared_starts[group]
    a = first + within // n
    b = first + within % n
    upper = a < b  # documents ascend within a word: a < b is left < right
    a, b = a[upper], b[upper]
    left, right = pair_docs[a], pair_docs[b]
    products = weights[a] * weights[b]
    pairs = left * k + right
    if k * k <= np.iinfo(np.int32).max:  # a 32-bit sort is cheaper; the keys are the same
        pairs = pairs.astype(np.int32)
    keys, inverse = np.unique(pairs, return_inverse=True)
    keys = keys.astype(np.int64)
    sums = np.bincount(inverse.ravel(), weights=products, minlength=len(keys))
    key_rows, key_cols = np.divmod(keys, k)
    values = np.clip(sums / scale[key_rows] / scale[key_cols], -1.0, 1.0)
    mirrored = np.clip(sums / scale[key_cols] / scale[key_rows], -1.0, 1.0)
    return SimilarityGraph.symmetric(k, key_rows, key_cols, values, mirrored)


@functools.lru_cache(maxsize=65_536)
def _cached_tokens(text: str) -> tuple[str, ...]:
    """:func:`_tokens` of a text, cached (the same memories are retrieved again and again)."""
    return tuple(_tokens(text))


def lexical_similarity(texts: Sequence[str]) -> np.ndarray:
    """Cosine similarity (K x K, diagonal 1) of TF-IDF word vectors over ``texts``.

    The dense form of :func:`lexical_graph` (a text without words is similar to nothing:
    row and column 0, diagonal 1).

    Args:
        texts: the memory texts.

    Returns:
        The K x K similarity.
    """
    return lexical_graph(texts).dense()


def memory_graph(memories: Sequence[Memory], embed: Embedder | None = None) -> SimilarityGraph:
    """Similarity of the memories: cosine of ``embed``'s vectors, else lexical (sparse).

    The lexical graph of a frozen context (a tuple, as the engine holds it) is computed
    once: the recency candidate (``core.recency``) and hierarchical attribution read the
    same read-only graph (the latest few contexts are kept, by identity; the graph is a
    function of the texts alone). ``embed`` is called on every call.

    A transient embedding failure (a timeout, a rate limit) falls back to lexical
    similarity with a warning: similarity only orders what is tested together. Anything
    else (an exception that retrying cannot heal, a wrong number or shape of vectors) is
    a configuration error raised at once.

    Args:
        memories: the context.
        embed: texts -> vectors (None: lexical similarity, :func:`lexical_graph`).

    Returns:
        The similarity graph.

    Raises:
        ConfigurationError: ``embed`` returned vectors of the wrong shape.
    """
    if embed is None and isinstance(memories, tuple):  # a frozen context, computed once
        with _RECENT_LOCK:
            for held, graph in _RECENT:
                if held is memories:
                    return graph
        graph = lexical_graph([m.content for m in memories])
        with _RECENT_LOCK:
            _RECENT.insert(0, (memories, graph))
            del _RECENT[_RECENT_SIZE:]
        return graph
    return _memory_graph([m.content for m in memories], embed)


_RECENT: list[tuple[tuple[Memory, ...], SimilarityGraph]] = []
"""The lexical graphs of the latest frozen contexts (by identity), newest first."""
_RECENT_SIZE = 4
_RECENT_LOCK = threading.Lock()


def _memory_graph(texts: list[str], embed: Embedder | None) -> SimilarityGraph:
    """:func:`memory_graph` of the texts, computed."""
    if embed is None:
        return lexical_graph(texts)
    try:
        vectors = embed(texts)
    except Exception as exc:
        if any(is_transient(e) for e in exception_chain(exc)):
            logger.warning(
                "embedding failed (%s); grouping memories by word similarity instead",
                redact(f"{type(exc).__name__}: {exc}")[:300],
            )
            return lexical_graph(texts)
        raise ConfigurationError(f"the embed function failed: {type(exc).__name__}") from exc
    try:
        matrix = np.asarray(vectors, dtype=float)
        if matrix.ndim != 2 or len(matrix) != len(texts):
            raise ConfigurationError(f"expected {len(texts)} vectors, got shape {matrix.shape}")
        return SimilarityGraph.from_dense(cosine_similarity(matrix))
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"the embed function returned unusable vectors: {exc}") from exc


def memory_similarity(memories: Sequence[Memory], embed: Embedder | None = None) -> np.ndarray:
    """K x K similarity of the memories: the dense form of :func:`memory_graph`.

    Args:
        memories: the context.
        embed: texts -> vectors (None: lexical similarity).

    Returns:
        The K x K similarity.

    Raises:
        ConfigurationError: ``embed`` returned vectors of the wrong shape.
    """
    return memory_graph(memories, embed).dense()


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
    return carries_answer(game, 1 << position, answers, threshold)


def carries_answer(
    game: CoalitionGame, coalition: Coalition, answers: Sequence[str], threshold: float
) -> str | None:
    """The answer of ``answers`` the memories of ``coalition`` give alone, or None.

    As :func:`supports_answer` for a set of memories asked together (a group test):
    every trial fails, agrees with one of ``answers`` and is not the no-memory answer.

    Args:
        game: the coalition table (the coalition and the empty coalition evaluated).
        coalition: the memories asked together.
        answers: the answers looked for.
        threshold: the success threshold of one trial.

    Returns:
        The first of ``answers`` they agree with, or None.
    """
    scores = game.scores.get(coalition, ())
    given = game.answers_of(coalition)
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


GROUP_SEARCH_FROM = 25
"""Contexts of at least this many memories find their answer group by group tests
(:func:`answer_group_search`) instead of asking every memory alone."""

GroupSearch = Generator[list[Coalition], None, list[Coalition]]
"""Yields coalitions to evaluate alone (one trial each); returns every coalition tested."""


def answer_group_search(
    game: CoalitionGame,
    threshold: float,
    similarity: Similarity,
    *,
    branching: int = 4,
    singles: int = 3,
) -> GroupSearch:
    """Find the memories that alone give the failing answer by group tests (adaptive).

    Asking each of K memories alone costs K calls. When r of them carry the failing answer
    (redundant copies of one stale claim), a set of memories asked together gives that
    answer as soon as it holds one copy (a copy alone outweighs the evidence; a set without
    one gives the evidence's answer or the no-memory one), so the copies are found by
    adaptive group testing: the memories are laid out in :func:`similarity_order`
    (near-duplicates adjacent: copies fall into a few contiguous runs), cut into
    ``branching`` contiguous parts, each part is asked alone (one batch), a part that gives
    the failing answer is cut again, down to parts of at most ``singles`` memories whose
    members are asked alone. About ``branching`` calls per run of copies per level plus one
    per copy, instead of K. The members of the answer group (:func:`answer_group`) are
    then in the table as singletons, as after asking every memory alone; a memory never
    asked alone is not in it.

    The tests only propose: the group is a candidate (``core.stages.clearing``) verified
    like any other (Eq. 18-19). A copy asked together with the evidence and outvoted by it
    is not found (it is not needed for the answer either; it is not reported as a carrier).

    Args:
        game: the coalition table (the full context evaluated).
        threshold: the success threshold of one trial.
        similarity: the memories' similarity (dense or sparse).
        branching: parts per cut.
        singles: parts of at most this many memories are asked member by member.

    Returns:
        A generator yielding batches of coalitions (the empty context first when it is
        not in the table) and returning every coalition it tested.
    """
    tested: list[Coalition] = []
    k = game.k
    order = similarity_order(range(k), similarity)
    parts = _cut(order, branching)
    first = [from_positions(p) for p in parts]
    missing = ([0] if game.trials_of(0) == 0 else []) + first
    yield [c for c in missing if game.trials_of(c) == 0]
    harmful = failing_answers(game, threshold)
    silent = silent_answers(game)
    same = game.same or plain_same
    if not harmful or not silent or any(same(h, s) for h in harmful for s in silent):
        return first
    while parts:
        tests = [from_positions(p) for p in parts]
        fresh = [t for t in tests if game.trials_of(t) == 0]
        if fresh:
            yield fresh
        tested += tests
        following: list[list[int]] = []
        for part, test in zip(parts, tests, strict=True):
            if len(part) == 1 or carries_answer(game, test, harmful, threshold) is None:
                continue
            if len(part) <= singles:
                following += [[i] for i in part]
            else:
                following += _cut(part, branching)
        parts = following
    return tested


def _cut(positions: Sequence[int], parts: int) -> list[list[int]]:
    """``positions`` cut into ``parts`` contiguous runs of near-equal length."""
    n = len(positions)
    parts = max(1, min(parts, n))
    bounds = [round(j * n / parts) for j in range(parts + 1)]
    return [list(positions[a:b]) for a, b in pairwise(bounds) if b > a]


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
