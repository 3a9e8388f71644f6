"""Fault proposals: wrong answers drawn from the conversation, and the records that state them.

Three fault types (the paper's Table 3):

- ``precise_temporal``: a temporal question's answer with its date replaced by another date
  of the same conversation (a session date, same granularity: day, month or year);
- ``precise_factual``: the answer replaced by another answer of the same kind from the same
  conversation (same question form and head word, ``where``, ``how old``, ``what book``...,
  and same answer shape: number, list, short phrase or sentence);
- ``explicit_conflict``: a record that states a wrong answer of the same kind and explicitly
  contradicts the reference ("..., not <reference>").

Records are written as ordinary memory records (see :mod:`.statements`). Redundant faults
are two paraphrases of the same claim; joint faults are two hedged records, each weaker
than the gold evidence, that agree on the same wrong answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date

import numpy as np

from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.simulation.world import normalize_answer

from .statements import AUX_VERBS, lower_first, statement

__all__ = [
    "FAULT_TYPES",
    "answer_shape",
    "answers_conflict",
    "fault_texts",
    "is_temporal",
    "same_kind_distractor",
    "temporal_distractor",
    "wh_class",
]

FAULT_TYPES = ("explicit_conflict", "precise_factual", "precise_temporal")

_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
# (pattern, granularity) in matching order; granularity names what a replacement must change.
_DATE_PATTERNS = (
    (re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}\.?,?\s+\d{{4}}\b"), "dmy"),
    (re.compile(rf"\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b"), "mdy"),
    (re.compile(rf"\b{_MONTH}\.?,?\s+\d{{4}}\b"), "my"),
    (re.compile(rf"\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b"), "md"),
    (re.compile(r"\b(?:19|20)\d{2}\b"), "y"),
)
_AUX_WORDS = AUX_VERBS | {"might", "may"}
_WH = (
    "how many",
    "how long",
    "how often",
    "how much",
    "what kind",
    "what type",
    "which",
    "whom",
    "whose",
    "who",
    "where",
    "when",
    "why",
    "how",
    "what",
)


def is_temporal(question: str, answer: str, category: int) -> bool:
    """A temporal question: ``when``/``how long``, a time-unit head, or a dated answer.

    LoCoMo's category 2 also holds non-temporal answers ("Which country ... in 2010?" ->
    "France"), so the category alone does not decide.

    Args:
        question: The LoCoMo question.
        answer: Its gold answer.
        category: The LoCoMo question category.

    Returns:
        Whether the question is temporal.
    """
    del category  # kept in the signature: callers pass the annotation they have
    if question.lower().lstrip().startswith(("when", "how long")):
        return True
    if re.search(r"\b(?:year|month|week|day|date)s?$", wh_class(question)):
        return True
    return any(p.search(answer) for p, _ in _DATE_PATTERNS)


_NUMBER = re.compile(
    r"(?:\d[\d.,]*|one|two|three|four|five|six|seven|eight|nine|ten|once|twice)\b.*", re.I
)


def answer_shape(answer: str) -> str:
    """Coarse answer shape: ``number``, ``list``, ``short`` (<= 3 words) or ``long``.

    Args:
        answer: The answer.

    Returns:
        The shape.
    """
    text = answer.strip()
    if _NUMBER.fullmatch(text) and len(text.split()) <= 3:
        return "number"
    if "," in text or " and " in text:
        return "list"
    return "short" if len(text.split()) <= 3 else "long"


def wh_class(question: str) -> str:
    """The question form that defines "an answer of the same kind".

    The wh-word, plus the head noun or adjective it governs ("what book", "how old",
    "what kind of art" -> "what art"), so that a wrong answer to "What pets does Melanie
    have?" is another pet-like answer, not any answer to any "what" question.

    Args:
        question: The question.

    Returns:
        The question form.
    """
    text = re.sub(r"^according to [^,]+,\s*", "", question.lower().strip())
    tokens = re.findall(r"[a-z0-9']+", text)
    for wh in _WH:
        parts = wh.split()
        if tokens[: len(parts)] != parts:
            continue
        rest = tokens[len(parts) :]
        if wh in {"what kind", "what type"} and len(rest) >= 2 and rest[0] == "of":
            return f"what {rest[1].rstrip('s')}"
        if wh in {"what", "which", "how", "whose"} and rest and rest[0] not in _AUX_WORDS:
            return f"{wh} {rest[0].rstrip('s')}"
        return wh
    return "yes/no"


def _format(day: date, granularity: str) -> str:
    month = _MONTHS[day.month - 1]
    return {
        "dmy": f"{day.day} {month} {day.year}",
        "mdy": f"{month} {day.day}, {day.year}",
        "my": f"{month} {day.year}",
        "md": f"{month} {day.day}",
        "y": str(day.year),
    }[granularity]


def temporal_distractor(answer: str, dates: Iterable[date], rng: np.random.Generator) -> str | None:
    """``answer`` with its date replaced by another date of the conversation, or ``None``.

    Args:
        answer: The gold answer.
        dates: The conversation's dates.
        rng: The random generator.

    Returns:
        The distractor, or None when no other date fits.
    """
    for pattern, granularity in _DATE_PATTERNS:
        match = pattern.search(answer)
        if not match:
            continue
        original = normalize_answer(match.group(0))
        options = sorted(
            {_format(d, granularity) for d in dates} - {match.group(0)},
            key=lambda s: (len(s), s),
        )
        options = [o for o in options if normalize_answer(o) != original]
        if not options:
            return None
        wrong = options[int(rng.integers(len(options)))]
        return answer[: match.start()] + wrong + answer[match.end() :]
    return None


def answers_conflict(candidate: str, reference: str) -> bool:
    """True when ``candidate`` is a genuinely different answer (no overlap in meaning).

    Args:
        candidate: The candidate answer.
        reference: The gold answer.

    Returns:
        Whether the answers conflict.
    """
    a, b = normalize_answer(candidate), normalize_answer(reference)
    if not a or not b or a == b or a in b or b in a:
        return False
    ta, tb = set(a.split()), set(b.split())
    return len(ta & tb) / len(ta | tb) <= 0.5


def same_kind_distractor(
    reference: str, candidates: Sequence[str], rng: np.random.Generator
) -> str | None:
    """A random candidate answer that conflicts with ``reference``, or ``None``.

    Args:
        reference: The gold answer.
        candidates: Answers of the same kind from the conversation.
        rng: The random generator.

    Returns:
        The distractor, or None.
    """
    options = sorted({c for c in candidates if answers_conflict(c, reference)})
    if not options:
        return None
    return options[int(rng.integers(len(options)))]


def _open(text: str) -> str:
    """A statement without its final period, so paraphrases never contain each other."""
    return text[:-1] if text.endswith(".") else text


def fault_texts(
    fault_type: str,
    structure: str,
    *,
    question: str,
    wrong: str,
    reference: str,
    speaker: str,
    other: str,
) -> list[str]:
    """The injected record(s): one for ``direct``, two for ``redundant`` and ``joint``.

    Args:
        fault_type: The fault type (e.g. ``explicit_conflict``).
        structure: ``direct``, ``redundant`` or ``joint``.
        question: The question.
        wrong: The wrong answer the fault asserts.
        reference: The gold answer.
        speaker: The conversation's speaker the fault quotes.
        other: The other speaker.

    Returns:
        The fault texts.

    Raises:
        ConfigurationError: ``structure`` is not one of the three.
    """
    claim = statement(question, wrong)
    core = _open(claim)
    reference = reference.strip().rstrip(".")
    if fault_type == "explicit_conflict":
        first = f"Correction: {lower_first(core)}, not {reference}."
        second = f"{speaker} made clear it was {wrong}, not {reference}: {lower_first(core)}."
        hedged = (
            f"{speaker} was no longer sure about {reference}; perhaps {lower_first(core)}.",
            f"{other} suspected {reference} was a mix-up and that {lower_first(core)}.",
        )
    else:
        first = claim
        second = f"As {speaker} put it, {lower_first(core)}, {_tail(fault_type)}."
        hedged = (
            f"{speaker} was not certain, but thought that {lower_first(core)}.",
            f"{other} had a vague memory that {lower_first(core)}, without details.",
        )
    if structure == "direct":
        return [first]
    if structure == "redundant":
        return [first, second]
    if structure == "joint":
        return list(hedged)
    raise ConfigurationError(f"no fault records for structure {structure!r}")


def _tail(fault_type: str) -> str:
    return "as far as the dates go" if fault_type == "precise_temporal" else "for the record"
