"""Rule-based features shared by the baselines: grounding, novelty, recency."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from ..core.stopwords import ADMISSION_STOPWORDS as STOPWORDS

__all__ = ["STOPWORDS", "lexical_novelty", "recency", "rouge_l_grounding", "tokens"]

_WORD = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens without stop words.

    Args:
        text: The text.

    Returns:
        The tokens, in order.
    """
    return [t for t in _WORD.findall(text.lower()) if t not in STOPWORDS]


def _lcs(a: Sequence[str], b: Sequence[str]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, start=1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def rouge_l_grounding(candidate: str, context: str) -> float:
    """A-MAC-style factual confidence: best ROUGE-L F1 of the candidate against a context line.

    Args:
        candidate: The candidate memory's text.
        context: The historical context (one turn per line).

    Returns:
        The best F1 in [0, 1].
    """
    cand = tokens(candidate)
    if not cand:
        return 0.0
    best = 0.0
    for line in context.splitlines():
        ref = tokens(line)
        if not ref:
            continue
        lcs = _lcs(cand, ref)
        if lcs:
            p, r = lcs / len(cand), lcs / len(ref)
            best = max(best, 2 * p * r / (p + r))
    return best


def lexical_novelty(candidate: str, existing: Sequence[str]) -> float:
    """1 - max Jaccard similarity to the existing memories (1.0 with an empty store).

    Args:
        candidate: The candidate memory's text.
        existing: The memories already stored.

    Returns:
        The novelty in [0, 1].
    """
    cand = set(tokens(candidate))
    if not existing or not cand:
        return 1.0
    sims = [len(cand & set(tokens(m))) / len(cand | set(tokens(m)) or {""}) for m in existing]
    return 1.0 - max(sims)


def recency(age_hours: float, half_life_hours: float) -> float:
    """exp(-ln 2 * age / half-life); 1.0 for a just-extracted candidate.

    Args:
        age_hours: The candidate's age.
        half_life_hours: The half-life.

    Returns:
        The recency in (0, 1].
    """
    return math.exp(-math.log(2) * max(0.0, age_hours) / half_life_hours)
