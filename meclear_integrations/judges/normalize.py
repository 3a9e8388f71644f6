"""Answer normalisation shared by the rule judges and the simulated world."""

from __future__ import annotations

import functools
import re
import string

__all__ = ["is_no_answer", "normalize_answer"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Normalise an answer for exact-match scoring (SQuAD-style).

    Lower-cases, drops punctuation and the articles a/an/the, and collapses white space.

    Args:
        text: An answer or a reference.

    Returns:
        The normalised text.

    Example:
        >>> normalize_answer("  The December, 2023! ")
        'december 2023'
    """
    if type(text) is not str:  # a str subclass or another type: as written, uncached
        return _normalize(text)
    return _normalized(text)


def _normalize(text: str) -> str:
    text = text.lower().translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


_normalized = functools.lru_cache(maxsize=4096)(_normalize)
"""The same, kept for the next ask: the judges and the simulated world normalise the same
few answers once per evaluator call."""


_NO_ANSWERS = frozenset(
    {
        "",
        "i dont know",
        "i do not know",
        "dont know",
        "unknown",
        "not known",
        "no answer",
        "none",
        "na",
        "not sure",
        "im not sure",
        "i am not sure",
        "cannot answer",
        "i cannot answer",
        "i cant answer",
        "no information",
        "not enough information",
    }
)


def is_no_answer(text: str) -> bool:
    """Whether ``text`` is an empty answer or an abstention ("I don't know", "unknown").

    Args:
        text: An answer.

    Returns:
        True for an empty answer or one of the common ways of not answering.

    Example:
        >>> is_no_answer("I don't know."), is_no_answer("Paris")
        (True, False)
    """
    return normalize_answer(str(text)) in _NO_ANSWERS
