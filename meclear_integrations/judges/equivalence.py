"""Answer normalisation and equivalence by meaning.

:func:`normalize_answer` (SQuAD-style, shared by the rule judges and the simulated world)
and :func:`is_no_answer` read one answer; the rest compares two, so that surface form
alone never forces an abstention.

The task evaluator abstains (``unverified / accepted_two_answers``) when the judge accepts
two answers that disagree. Comparing surface forms let one memory switch clearance off: a
memory saying "always write months as numbers" makes the agent answer ``12/2023`` with it
and ``December 2023`` without; the judge accepts both and every run abstained. Two
accepted answers are therefore compared in two steps:

1. **Normalisation** (:func:`canonical_answer`, no model call): dates (``12/2023``,
   ``2023-12``, ``Dec. 2023`` and ``December 2023`` are one month; ``2023-12-25``,
   ``25 December 2023`` and ``December 25th, 2023`` one day; ``d/m/yyyy`` only when the day
   is above 12, an ambiguous ``01/02/2023`` is left as written), numbers (``three`` = ``3``,
   ``1,000`` = ``1000``, ``3.0`` = ``3``) and units (length, mass, volume and duration
   converted to metres, kilograms, litres and seconds: ``3 km`` = ``3000 m``,
   ``90 min`` = ``1.5 h``), then the SQuAD normalisation and the word rule of
   :func:`~meclear_integrations.judges.task.answers_agree` (one answer's words all among
   the other's, no negation among the extra words).
2. **The judge, asked once** per pair that still differs (:func:`equivalence_judge`): the
   reference prompt with one answer as the reference and the other as the candidate, under
   the same nonce-bound verdict protocol as every judge call (a memory or an answer cannot
   forge the verdict). Only a judge that reads text with a model can be asked (an
   :class:`~meclear_integrations.judges.llm.LLMJudge`, or any judge exposing
   ``equivalence_judge()``); rule and function judges keep step 1 only.

Real contradictions still abstain: two answers one of which denies the other
(:func:`contradicts`: "Paris" and "not Paris") are never sent to the judge, and a judge
that says two answers differ leaves the abstention in place.
"""

from __future__ import annotations

import functools
import re
import string
from typing import Any

from ..core.lazy import lazy_compile

__all__ = [
    "canonical_answer",
    "contradicts",
    "equivalence_judge",
    "is_no_answer",
    "normalize_answer",
]


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


_MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        (  # noqa: SIM905 - a word list reads best as one string
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
        ).split()
    )
}
_NUMBER_WORDS.update(
    {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80}
)
_NUMBER_WORDS.update({"ninety": 90, "hundred": 100, "thousand": 1000, "dozen": 12})

_UNITS: dict[str, tuple[float, str]] = {}
for _names, _factor, _dim in (
    (("km", "kms", "kilometer", "kilometers", "kilometre", "kilometres"), 1000.0, "m"),
    (("m", "meter", "meters", "metre", "metres"), 1.0, "m"),
    (("cm", "centimeter", "centimeters", "centimetre", "centimetres"), 0.01, "m"),
    (("mm", "millimeter", "millimeters", "millimetre", "millimetres"), 0.001, "m"),
    (("mi", "mile", "miles"), 1609.344, "m"),
    (("ft", "foot", "feet"), 0.3048, "m"),
    (("kg", "kgs", "kilogram", "kilograms", "kilo", "kilos"), 1.0, "kg"),
    (("g", "gram", "grams"), 0.001, "kg"),
    (("lb", "lbs", "pound", "pounds"), 0.45359237, "kg"),
    (("l", "liter", "liters", "litre", "litres"), 1.0, "l"),
    (("ml", "milliliter", "milliliters", "millilitre", "millilitres"), 0.001, "l"),
    (("h", "hr", "hrs", "hour", "hours"), 3600.0, "s"),
    (("min", "mins", "minute", "minutes"), 60.0, "s"),
    (("s", "sec", "secs", "second", "seconds"), 1.0, "s"),
):
    for _name in _names:
        _UNITS[_name] = (_factor, _dim)
_UNIT = r"(?P<unit>" + "|".join(sorted(map(re.escape, _UNITS), key=len, reverse=True)) + r")"
_NUM = r"(?P<num>\d+(?:\.\d+)?)"

# Compiled on first use: the integrations import this module, a query uses it.
_THOUSANDS = lazy_compile(r"(?<=\d),(?=\d{3}\b)")
_WORD_NUMBER = lazy_compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b")
_ISO_DAY = lazy_compile(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b")
_SLASH_DAY = lazy_compile(r"\b(?P<a>\d{1,2})[/.](?P<b>\d{1,2})[/.](?P<y>\d{4})\b")
_MONTH_DAY_YEAR = lazy_compile(
    rf"\b{_MONTH}\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})\b"
)
_DAY_MONTH_YEAR = lazy_compile(
    rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(?P<y>\d{{4}})\b"
)
_MONTH_YEAR = lazy_compile(rf"\b{_MONTH},?\s+(?:of\s+)?(?P<y>\d{{4}})\b")
_NUM_MONTH_YEAR = lazy_compile(r"(?<![\d/.-])\b(?P<m>\d{1,2})[/.-](?P<y>\d{4})\b")
_YEAR_NUM_MONTH = lazy_compile(r"\b(?P<y>\d{4})[/-](?P<m>\d{1,2})\b(?![/.-]\d)")
_QUANTITY = lazy_compile(rf"\b{_NUM}\s?{_UNIT}\b")
_DECIMAL = lazy_compile(r"\b(\d+)\.(\d+)\b")


def _month(value: int) -> bool:
    return 1 <= value <= 12


def _day_token(y: str, m: int, d: int) -> str:
    return f" date{int(y)}m{m:02d}d{d:02d} " if _month(m) and 1 <= d <= 31 else ""


def _number(value: float) -> str:
    text = f"{value:.6g}" if abs(value) < 1e15 else str(value)
    if "e" in text:
        text = f"{value:f}".rstrip("0").rstrip(".")
    return text.replace(".", "p").replace("-", "neg")


def _iso(match: re.Match[str]) -> str:
    return _day_token(match["y"], int(match["m"]), int(match["d"])) or match[0]


def _slash(match: re.Match[str]) -> str:
    a, b = int(match["a"]), int(match["b"])
    if a > 12 and _month(b):  # day first
        return _day_token(match["y"], b, a)
    if b > 12 and _month(a):  # month first
        return _day_token(match["y"], a, b)
    if a == b:
        return _day_token(match["y"], a, b)
    return match[0]  # 01/02/2023: January or February, left as written


def _named_day(match: re.Match[str]) -> str:
    return _day_token(match["y"], _MONTHS[match["month"]], int(match["d"])) or match[0]


def _named_month(match: re.Match[str]) -> str:
    return f" date{int(match['y'])}m{_MONTHS[match['month']]:02d} "


def _numbered_month(match: re.Match[str]) -> str:
    m = int(match["m"])
    return f" date{int(match['y'])}m{m:02d} " if _month(m) else match[0]


def _quantity(match: re.Match[str]) -> str:
    factor, dim = _UNITS[match["unit"]]
    return f" qty{_number(float(match['num']) * factor)}{dim} "


def _decimal(match: re.Match[str]) -> str:
    return _number(float(match[0]))


def canonical_answer(text: str) -> str:
    """``text`` normalised by meaning: dates, numbers and units in one form each.

    Args:
        text: An answer.

    Returns:
        The normalised answer (SQuAD normalisation applied last).

    Example:
        >>> canonical_answer("12/2023") == canonical_answer("December 2023")
        True
        >>> canonical_answer("3 km") == canonical_answer("3,000 metres")
        True
    """
    text = text[:10_000].lower()
    text = _THOUSANDS.sub("", text)
    text = _WORD_NUMBER.sub(lambda m: str(_NUMBER_WORDS[m[1]]), text)
    text = _ISO_DAY.sub(_iso, text)
    text = _SLASH_DAY.sub(_slash, text)
    text = _MONTH_DAY_YEAR.sub(_named_day, text)
    text = _DAY_MONTH_YEAR.sub(_named_day, text)
    text = _MONTH_YEAR.sub(_named_month, text)
    text = _YEAR_NUM_MONTH.sub(_numbered_month, text)
    text = _NUM_MONTH_YEAR.sub(_numbered_month, text)
    text = _QUANTITY.sub(_quantity, text)
    text = _DECIMAL.sub(_decimal, text)
    return normalize_answer(text)


def contradicts(first: str, second: str, negations: frozenset[str]) -> bool:
    """Whether one answer denies the other ("Paris" and "not Paris").

    True when the words of one are all among the other's and the extra words hold a
    negation: such a pair is a real contradiction, never sent to the judge.

    Args:
        first: One answer.
        second: The other answer.
        negations: Words that deny a statement.

    Returns:
        True for a denial.
    """
    words_a, words_b = set(canonical_answer(first).split()), set(canonical_answer(second).split())
    fewer, more = sorted((words_a, words_b), key=len)
    return bool(fewer) and fewer <= more and bool((more - fewer) & negations)


def equivalence_judge(judge: Any) -> Any | None:
    """The judge to ask whether two accepted answers say the same thing, or None.

    An :class:`~meclear_integrations.judges.llm.LLMJudge` (LangChain and LlamaIndex judges
    included) gives a :class:`~meclear_integrations.judges.llm.ReferenceLLMJudge` over the
    same model and verdict protocol; any other judge may offer ``equivalence_judge()``.

    Args:
        judge: The query's judge.

    Returns:
        A judge whose ``score(question, answer, reference=other)`` says whether ``answer``
        states the same as ``other``, or None when the judge cannot be asked.
    """
    hook = getattr(judge, "equivalence_judge", None)
    if callable(hook):
        return hook()
    from .llm import LLMJudge, ReferenceLLMJudge

    if not isinstance(judge, LLMJudge):
        return None
    twin = ReferenceLLMJudge.__new__(ReferenceLLMJudge)
    twin.__dict__.update(vars(judge))  # same model, formats and metadata keys
    return twin
