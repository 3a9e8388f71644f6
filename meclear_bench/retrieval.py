"""BM25 retrieval over a memory bank (``rank-bm25``, the ``bench`` extra).

The paper retrieves a top-K context and freezes it before attribution (Eq. 6). The builder
uses Okapi BM25 from the ``rank-bm25`` library with an English stop-word list, ranking ties
by bank order so that retrieval is deterministic.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 6.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.core.stopwords import SEARCH_STOPWORDS

__all__ = ["BM25Retriever", "tokenize"]

_WORD = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric words without stop words.

    Args:
        text: The text.

    Returns:
        The tokens.
    """
    return [w for w in _WORD.findall(text.lower()) if w not in SEARCH_STOPWORDS]


def _bm25_class() -> type:
    try:
        from rank_bm25 import BM25Okapi
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "BM25 retrieval needs rank-bm25: pip install 'meclear-integrations[bench]'"
        ) from exc
    return BM25Okapi


class BM25Retriever:
    """Okapi BM25 over a fixed list of texts; :meth:`top_k` returns bank indices.

    Args:
        texts: The memory bank's texts.

    Raises:
        ConfigurationError: ``texts`` is empty.
        ImportError: ``rank-bm25`` (the ``bench`` extra) is not installed.
    """

    def __init__(self, texts: Sequence[str]) -> None:
        if not texts:
            raise ConfigurationError("cannot index an empty memory bank")
        self.texts = list(texts)
        # Empty token lists would break BM25's length normalisation; a placeholder keeps
        # the document (it matches nothing).
        self.corpus = [tokenize(t) or ["\x00"] for t in self.texts]
        self._index = _bm25_class()(self.corpus)

    def extended(self, texts: Sequence[str]) -> BM25Retriever:
        """A new index over this bank plus ``texts`` (appended, so their indices follow).

        Args:
            texts: The texts appended.

        Returns:
            The new retriever.
        """
        other = object.__new__(BM25Retriever)
        other.texts = [*self.texts, *texts]
        other.corpus = [*self.corpus, *(tokenize(t) or ["\x00"] for t in texts)]
        other._index = _bm25_class()(other.corpus)
        return other

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every text for ``query``.

        Args:
            query: The query.

        Returns:
            One score per text, in bank order.
        """
        return np.asarray(self._index.get_scores(tokenize(query)), dtype=float)

    def top_k(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best (index, score) pairs, best first; ties keep bank order.

        Args:
            query: The query.
            k: The number of results.

        Returns:
            The (index, score) pairs.
        """
        scores = self.scores(query)
        order = np.lexsort((np.arange(len(scores)), -scores))[:k]
        return [(int(i), float(scores[i])) for i in order]
