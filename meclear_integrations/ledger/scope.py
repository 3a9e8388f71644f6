"""Question scope: which recorded questions a verified harm applies to.

A clearance verifies that removing a memory fixes *one* question. The ledger applies that
harm to the question it was proven on (the same query id) and to questions like it, never
to every later context that happens to retrieve the memory: "What is Sam's dog called?"
keeps a note about Sam's dentist that was verified harmful for "When is Sam's dentist
appointment?".

Two questions are alike when their similarity reaches a threshold *and* they are about
the same people and things:

- with embeddings (the caller passes ``query_embedding=`` both when recording and when
  looking up): the cosine of the two vectors, threshold :data:`EMBEDDING_THRESHOLD`;
- otherwise the lexical fallback: the Jaccard index of the questions' normalised content-word
  sets (lower-cased, NFKC, stop words and one-letter words dropped, a light suffix strip),
  threshold :data:`LEXICAL_THRESHOLD`;
- either way, the names must agree (:func:`names_agree`): a question's *names* are its
  content words written with a capital letter other than at a sentence start, with a
  possessive "'s", or that are numbers or ordinals (:func:`name_tokens`); every name of
  each question must be among the other's content words. "What is Gina's favorite style of
  dance?" and "What is Jon's favorite style of dance?" reach a Jaccard of 0.6 but are not
  alike; "Remind me, what is gina's favorite style of dance?" is alike to the first (the
  name is still among its words).

The ledger never stores a question's words for this: a question's *signature* is the set of
its content words, each hashed (keyed with the ledger's ``query_key`` when it has one) to
12 hex digits, and its *name signature* the hashes of its names (the same hashes, a subset);
Jaccard and the name rule over hashed sets equal those over the words up to hash
collisions. Rows recorded before schema version 3 have no name signature: their harm
applies to the same question only (``migrations``).

Choice of the lexical threshold (``python -m meclear_bench.scope_threshold
--locomo DIR``, all 10 LoCoMo conversations, every pair of questions of a conversation):
the 1,986 template rewordings of a question ("Remind me, ...", "... Do you remember?")
score 1.0 and their names agree: all are in scope. The 202,782 pairs of questions with no
shared gold evidence score a median Jaccard of 0.083, a 99th percentile of 0.286 and a
99.9th of 0.429 (they share a speaker's name and little else); the names of 79.6 % of them
disagree. At 0.6, 0.017 % of them (34 pairs, each about one person: "When did Melanie run
a charity race?" / "What did Melanie realize after the charity race?") are in scope
(0.023 % on the Jaccard alone; 0.068 % at 0.5, 0.43 % at 0.3). Different questions about
the same fact (2,341 pairs with overlapping evidence) are in scope at 0.6 for 4.5 %
of pairs (18.8 % on the Jaccard alone: many ask about the other speaker): without
embeddings the others count as new questions and pay their own verified clearance, the
safe direction (a memory is withheld only where a harm was verified).
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

from ..core.stopwords import QUESTION_STOPWORDS

__all__ = [
    "EMBEDDING_THRESHOLD",
    "LEXICAL_THRESHOLD",
    "ScopedHarm",
    "content_tokens",
    "cosine",
    "jaccard",
    "lexical_signature",
    "name_signature",
    "name_tokens",
    "names_agree",
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

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SUFFIXES = ("ing", "ed", "es", "s")
_POSSESSIVE = re.compile(r"['\u2019]s\b", re.IGNORECASE)
_SENTENCE_END = ".?!:;"
_ORDINALS = frozenset(
    {"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"}
)
"""Ordinal words that tell otherwise equal questions apart ("first" / "fourth" tournament)."""
_OPENERS = " \t\r\n\"'\u201c\u201d\u2018\u2019([{\u00ab\u00bb-"


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _normal(word: str) -> str | None:
    """One word as a content word (casefolded, stemmed), or None when it is dropped."""
    stemmed = _stem(word.casefold())
    return stemmed if _content(stemmed) else None


def _content(word: str) -> bool:
    return (len(word) > 1 or word.isdigit()) and word not in QUESTION_STOPWORDS


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
    return frozenset(w for w in words if _content(w))


def name_tokens(question: str) -> frozenset[str]:
    """The content words of ``question`` that name someone or something (module docstring).

    A word is a name when it is written with a capital letter and does not start a
    sentence ("Gina" in "What is Gina's favorite style of dance?", "Pride" in "... at the
    Pride parade?"), when it takes a possessive "'s" however it is written ("gina's"), or
    when it is a number or an ordinal ("2023", "fourth"). Names are normalised as content
    words, so they are a subset of :func:`content_tokens`.

    Args:
        question: The question text.

    Returns:
        The set of normalised names.

    Example:
        >>> sorted(name_tokens("Remind me, what is Jon's favorite style of dance?"))
        ['jon']
    """
    text = unicodedata.normalize("NFKC", question)
    out = set()
    for match in _WORD.finditer(text):
        word = match.group()
        possessive = _POSSESSIVE.match(text, match.end()) is not None
        before = text[: match.start()].rstrip(_OPENERS)
        starts = not before or before[-1] in _SENTENCE_END
        capital = word[:1].isupper() and not starts
        if possessive or capital or word.isdigit() or word.casefold() in _ORDINALS:
            normal = _normal(word)
            if normal is not None:
                out.add(normal)
    return frozenset(out)


def _hashed(words: Iterable[str], key: bytes | str | None) -> list[str]:
    secret = key.encode("utf-8") if isinstance(key, str) else key
    out = set()
    for word in words:
        data = word.encode("utf-8")
        if secret is None:
            digest = hashlib.sha256(b"meclear-word\x1f" + data).hexdigest()
        else:
            digest = hmac.new(secret, data, hashlib.sha256).hexdigest()
        out.add(digest[:12])
    return sorted(out)


def lexical_signature(question: str, *, key: bytes | str | None = None) -> list[str]:
    """The question's signature: its content words hashed to 12 hex digits, sorted.

    Args:
        question: The question text.
        key: The ledger's secret ``query_key`` (HMAC), when it has one.

    Returns:
        The sorted hashes.
    """
    return _hashed(content_tokens(question), key)


def name_signature(question: str, *, key: bytes | str | None = None) -> list[str]:
    """The question's names (:func:`name_tokens`) hashed as :func:`lexical_signature` does.

    Each hash is also in the question's lexical signature (same word, same hash).

    Args:
        question: The question text.
        key: The ledger's secret ``query_key`` (HMAC), when it has one.

    Returns:
        The sorted hashes.
    """
    return _hashed(name_tokens(question), key)


def names_agree(
    names: Iterable[str],
    signature: Iterable[str],
    other_names: Iterable[str],
    other_signature: Iterable[str],
) -> bool:
    """Whether two questions are about the same people and things (module docstring).

    Every name of each question must be among the other question's content words: "What is
    Jon's favorite style of dance?" and "What is Gina's ...?" disagree; a rewording that
    writes "gina's" or drops a capital agrees, as its words still hold the name.

    Args:
        names: One question's names (hashed or not, as ``signature``).
        signature: Its content words.
        other_names: The other question's names.
        other_signature: Its content words.

    Returns:
        True when they agree.

    Example:
        >>> names_agree(["jon"], ["jon", "dance"], ["gina"], ["gina", "dance"])
        False
    """
    return set(names) <= set(other_signature) and set(other_names) <= set(signature)


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
    names: Sequence[str] | None,
    other_names: Sequence[str] | None,
    lexical_threshold: float = LEXICAL_THRESHOLD,
    embedding_threshold: float = EMBEDDING_THRESHOLD,
) -> tuple[float, bool]:
    """How alike two questions are, and whether they are alike (module docstring).

    Embeddings give the similarity when both questions have one of the same length;
    otherwise the lexical signatures do. Either way the two are alike only when the
    similarity reaches its threshold *and* their names agree (:func:`names_agree`); a
    recorded question whose names are unknown (``None``: recorded before schema version 3)
    is like no other question.

    Args:
        signature: The current question's lexical signature.
        embedding: Its embedding, if the caller gave one.
        other_signature: The recorded question's signature (None: unknown).
        other_embedding: The recorded question's embedding, if recorded.
        names: The current question's name signature (None: unknown).
        other_names: The recorded question's name signature (None: unknown).
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
        value, threshold = cosine(embedding, other_embedding), embedding_threshold
    elif not other_signature or not signature:
        return 0.0, False
    else:
        value, threshold = jaccard(signature, other_signature), lexical_threshold
    if names is None or other_names is None or other_signature is None:
        return value, False
    agree = names_agree(names, signature, other_names, other_signature)
    return value, agree and value >= threshold


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
