"""Question scope: which recorded questions a verified harm applies to.

A clearance verifies that removing a memory fixes *one* question. The ledger applies that
harm to the question it was proven on (the same query id) and to questions like it, never
to every later context that happens to retrieve the memory: "What is Sam's dog called?"
keeps a note about Sam's dentist that was verified harmful for "When is Sam's dentist
appointment?".

Two questions are alike when their similarity reaches a threshold:

- with embeddings (the caller passes ``query_embedding=`` both when recording and when
  looking up): the cosine of the two vectors, threshold :data:`EMBEDDING_THRESHOLD`;
- otherwise the lexical fallback: the Jaccard index of the questions' normalised content-word
  sets (lower-cased, NFKC, stop words and one-letter tokens dropped, a light suffix strip),
  threshold :data:`LEXICAL_THRESHOLD`.

The ledger never stores a question's words for this: a question's *signature* is the set of
its content words, each hashed (keyed with the ledger's ``query_key`` when it has one) to
12 hex digits; Jaccard over hashed sets equals Jaccard over the words up to hash
collisions.

Choice of the lexical threshold (``python -m meclear_bench.scope_threshold
--locomo DIR``, all 10 LoCoMo conversations, every pair of questions of a conversation):
the 1,986 template rewordings of a question ("Remind me, ...", "... Do you remember?")
score 1.0 (their added words are conversational filler the normaliser drops); the 202,782
pairs of questions with no shared gold evidence score a median of 0.083, a 99th percentile
of 0.286 and a 99.9th of 0.429 (they share a speaker's name and little else). At 0.6, 47 of
them (0.023 %) are in scope (0.087 % at 0.5, 0.75 % at 0.3). Different questions about the
same fact (2,341 pairs with overlapping evidence) are in scope at 0.6 for 18.8 % of pairs:
without embeddings the others count as new questions and pay their own verified clearance,
the safe direction (a memory is withheld only where a harm was verified).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "EMBEDDING_THRESHOLD",
    "LEXICAL_THRESHOLD",
    "ScopedHarm",
    "content_tokens",
    "cosine",
    "jaccard",
    "lexical_signature",
    "question_similarity",
]

LEXICAL_THRESHOLD = 0.6
"""Jaccard of content-word sets at or above which two questions are alike (module docstring)."""
EMBEDDING_THRESHOLD = 0.9
"""Cosine of question embeddings at or above which two questions are alike. Not measured
here (no embedding model offline): a conservative default for sentence embeddings, where
paraphrases typically score above 0.9 and different questions about one person below;
set ``HarmLedger(embedding_threshold=...)`` after measuring your own model."""

Scope = Literal["same_query", "similar_query"]

_STOP = frozenset(
    {
        "a",
        "about",
        "above",
        "after",
        "again",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "ever",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "know",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "please",
        "question",
        "quick",
        "remember",
        "remind",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "tell",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    }
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SUFFIXES = ("ing", "ed", "es", "s")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_tokens(question: str) -> frozenset[str]:
    """The normalised content words of ``question`` (module docstring).

    Args:
        question: The question text.

    Returns:
        The set of content words.

    Example:
        >>> sorted(content_tokens("What is Sam's dog called?"))
        ['call', 'dog', 'sam']
    """
    text = unicodedata.normalize("NFKC", question).casefold()
    words = (_stem(w) for w in _WORD.findall(text))
    return frozenset(w for w in words if len(w) > 1 and w not in _STOP)


def lexical_signature(question: str, *, key: bytes | str | None = None) -> list[str]:
    """The question's signature: its content words hashed to 12 hex digits, sorted.

    Args:
        question: The question text.
        key: The ledger's secret ``query_key`` (HMAC), when it has one.

    Returns:
        The sorted hashes.
    """
    secret = key.encode("utf-8") if isinstance(key, str) else key
    out = set()
    for word in content_tokens(question):
        data = word.encode("utf-8")
        if secret is None:
            digest = hashlib.sha256(b"meclear-word\x1f" + data).hexdigest()
        else:
            digest = hmac.new(secret, data, hashlib.sha256).hexdigest()
        out.add(digest[:12])
    return sorted(out)


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """|A and B| / |A or B| (0.0 when both are empty).

    Args:
        a: One set.
        b: The other.

    Returns:
        The Jaccard index in [0, 1].

    Example:
        >>> jaccard(["dog", "sam", "call"], ["dog", "sam", "name"])
        0.5
    """
    sa, sb = set(a), set(b)
    union = sa | sb
    return len(sa & sb) / len(union) if union else 0.0


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two vectors (0.0 when either is zero or their lengths differ).

    Args:
        a: One vector.
        b: The other.

    Returns:
        The cosine in [-1, 1].
    """
    if len(a) != len(b) or not a:
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def question_similarity(
    signature: Sequence[str],
    embedding: Sequence[float] | None,
    other_signature: Sequence[str] | None,
    other_embedding: Sequence[float] | None,
    *,
    lexical_threshold: float = LEXICAL_THRESHOLD,
    embedding_threshold: float = EMBEDDING_THRESHOLD,
) -> tuple[float, bool]:
    """How alike two questions are, and whether that is above the threshold.

    Embeddings decide when both questions have one of the same length; otherwise the lexical
    signatures do.

    Args:
        signature: The current question's lexical signature.
        embedding: Its embedding, if the caller gave one.
        other_signature: The recorded question's signature (None: unknown).
        other_embedding: The recorded question's embedding, if recorded.
        lexical_threshold: The Jaccard threshold.
        embedding_threshold: The cosine threshold.

    Returns:
        (similarity, alike).
    """
    if (
        embedding is not None
        and other_embedding is not None
        and len(embedding) == len(other_embedding)
        and embedding
    ):
        value = cosine(embedding, other_embedding)
        return value, value >= embedding_threshold
    if not other_signature or not signature:
        return 0.0, False
    value = jaccard(signature, other_signature)
    return value, value >= lexical_threshold


@dataclass(frozen=True)
class ScopedHarm:
    """One memory the ledger verified harmful for this question (or one like it)."""

    memory_id: str
    """The memory's id in your store."""
    content_hash: str
    """SHA-256 of the text the harm was verified on (the same text as in the context)."""
    run_id: str
    """The verified run that proved it (full ledger run id)."""
    query_id: str
    """The question it was proven on."""
    scope: Scope
    """``same_query`` (this very question) or ``similar_query`` (a question like it)."""
    similarity: float
    """1.0 for ``same_query``; else the cosine or Jaccard that put it in scope."""
    carrier: bool = False
    """Harmful by redundancy (a carrier of a fault repeated elsewhere), if recorded so."""
    settled: bool = False
    """Verified against a reference answer or a person's correction (success signal
    ``reference`` / ``feedback``), not only by a live reference-free judge."""
