"""What the offline admission reader reads in a candidate memory and its context.

Plain text analysis, no model and no labels: content words (with lemmas when
``lemminflect`` is installed), the context's dated turns, and four observations a careful
reader makes about a candidate memory M in its historical context C:

- *support*: the share of M's content words that occur in C;
- *unsupported specifics*: numbers, dates and names M states that C never mentions;
- *superseded*: the turn of C that M restates is followed, later in C, by a turn on the
  same topic that states something else (an update M ignores);
- *specificity*: how many of M's content words carry information beyond its subject and
  generic feeling words ("happy", "great", "support"...): a vague memory changes no answer.

:mod:`.reader` answers every admission prompt from these observations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..core.stopwords import READING_STOPWORDS

__all__ = [
    "GENERIC",
    "Reading",
    "Turn",
    "content_words",
    "contradicts",
    "parse_turns",
    "read",
    "subject_of",
]

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
GENERIC = frozenset(
    """
    feel feels felt feeling feelings happy happiness great good love loves loved enjoy enjoys
    enjoyed enjoying important importance support supportive supported grateful proud excited
    excite amazing awesome nice fun help helps helped helping life people person family friend
    friends inspire inspired inspiring motivate motivated motivation passion passionate want
    wants wanted hope hopes believe believes think thinks thought appreciate appreciates
    experience experiences positive journey keep keeps kept value values valued meaningful
    special care cares caring encourage encouraged encouraging joy peace strength strong
    community others together express expressing expression creative creativity reminder
    remind reminds wonderful beautiful rewarding tough hard
    """.split()  # noqa: SIM905
)
"""Words that say how someone feels, not what happened: they make no answer specific."""
_MONTH_ORDER = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_MONTHS = frozenset(_MONTH_ORDER)
_NEGATION = (
    r"\b(?:not|no longer|never|instead of|rather than|"
    r"(?:is|was|are|were|do|does|did|has|have|had|ca|wo)n['’]t"
)
_DENIAL = re.compile(_NEGATION + r")\s+(?P<denied>(?:(?!\bbut\b)[^,.;!?()])*)", re.IGNORECASE)
"""A negation and what it denies, up to the end of its clause (a comma, "but")."""
_NEGATED = re.compile(_NEGATION + r"|no)\s+(?:(?!\bbut\b)[^,.;!?()])*", re.IGNORECASE)
"""A negated clause of a context turn (what it does not state)."""
_LABEL = re.compile(r"^\s*[A-Za-z]+:\s*")
"""A leading one-word label ("Note:", "Update:"): not part of what a memory asserts."""
_HEADER = re.compile(r"^\s*\[([^\]]*)\]\s*(.*)$")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@lru_cache(maxsize=200_000)
def _forms(word: str) -> frozenset[str]:
    low = word.lower().replace("’", "'")
    low = low[:-2] if low.endswith("'s") else low
    forms = {low}
    try:
        import lemminflect
    except ImportError:  # pragma: no cover - lemminflect is in the bench extra
        for suffix in ("ing", "ed", "es", "s"):
            if low.endswith(suffix) and len(low) - len(suffix) >= 3:
                forms.add(low[: -len(suffix)])
        return frozenset(forms)
    for lemmas in lemminflect.getAllLemmas(low).values():
        forms.update(lemmas)
    return frozenset(forms)


@lru_cache(maxsize=50_000)
def content_words(text: str) -> frozenset[str]:
    """The content words of ``text`` with their lemmas (lower case, stop words dropped).

    Args:
        text: Any text.

    Returns:
        The words and their lemmas.
    """
    out: set[str] = set()
    for word in _WORD.findall(text):
        forms = _forms(word)
        if not forms & READING_STOPWORDS:
            out |= forms
    return frozenset(out)


def _key_words(text: str) -> list[frozenset[str]]:
    """Content words of ``text``, one form set per distinct word, in order."""
    seen: list[frozenset[str]] = []
    for word in _WORD.findall(text):
        forms = _forms(word)
        if not forms & READING_STOPWORDS and not any(forms & s for s in seen):
            seen.append(forms)
    return seen


@dataclass(frozen=True)
class Turn:
    """One turn of a historical context."""

    index: int
    """Position in the context."""
    date: str
    """The last date seen in a ``[...]`` header at or before the turn (ISO), or ''."""
    speaker: str
    """The speaker before the colon ('' when none)."""
    text: str
    """What was said."""


@lru_cache(maxsize=4096)
def parse_turns(context: str) -> tuple[Turn, ...]:
    """The turns of a context: ``[header]`` lines set the date, ``speaker: text`` lines are turns.

    Args:
        context: The historical context text.

    Returns:
        The turns, in order.
    """
    turns: list[Turn] = []
    day = ""
    for raw in context.splitlines():
        line = raw.strip()
        if not line:
            continue
        m = _HEADER.match(line)
        if m:
            found = _DATE.search(m.group(1))
            day = found.group(0) if found else day
            line = m.group(2).strip()
            if not line:
                continue
        speaker, sep, text = line.partition(":")
        if sep and len(speaker.split()) <= 3 and "[" not in speaker:
            turns.append(Turn(len(turns), day, speaker.strip(), text.strip()))
        else:
            turns.append(Turn(len(turns), day, "", line))
    return tuple(turns)


def subject_of(candidate: str, context: str) -> str:
    """Whom the memory is about: the first context speaker it names, else its first name.

    Args:
        candidate: The candidate memory.
        context: The historical context.

    Returns:
        The subject's name, or ``"the user"``.
    """
    speakers = {t.speaker for t in parse_turns(context) if t.speaker}
    speakers.discard("user")
    speakers.discard("assistant")
    words = _WORD.findall(candidate)
    for w in words:
        if w in speakers or w.removesuffix("'s") in speakers:
            return w.removesuffix("'s")
    for i, w in enumerate(words):
        named = i > 0 and len(w) > 1 and w[:1].isupper() and w.lower() not in _MONTHS
        if named and not _forms(w) & READING_STOPWORDS:
            return w
    return "the user"


def _specifics(text: str) -> list[str]:
    """Numbers, month names and capitalised words after the first word."""
    words = _WORD.findall(text)
    out = []
    for i, w in enumerate(words):
        low = w.lower()
        if (
            w[0].isdigit()
            or low in _MONTHS
            or (i > 0 and w[0].isupper() and low not in READING_STOPWORDS)
        ):
            out.append(low.removesuffix("'s"))
    return out


@dataclass(frozen=True)
class Reading:
    """What the reader observes about a memory in its context."""

    subject: str
    """Whom the memory is about."""
    support: float
    """Share of the memory's content words found in the context."""
    unsupported: tuple[str, ...]
    """Numbers, dates and names the memory states and the context never mentions."""
    superseded_by: str
    """The later turn that updates what the memory restates ('' when none)."""
    source_turn: str
    """The context turn the memory restates best ('' when none matches)."""
    specificity: int
    """Content words beyond the subject and generic feeling words."""
    unsupported_correction: bool = False
    """The memory denies what the context states and asserts what it never says (read by
    meaning: :func:`contradicts`, whatever the wording)."""

    @property
    def grounded(self) -> bool:
        """Supported by the context, with no unsupported specifics and no later update."""
        return (
            self.support >= SUPPORT_FLOOR
            and not self.unsupported
            and not self.superseded_by
            and not self.unsupported_correction
        )

    @property
    def specific(self) -> bool:
        """Specific enough to change a later answer."""
        return self.specificity >= SPECIFIC_FLOOR


SUPPORT_FLOOR = 0.5
"""Least share of a memory's content words the context must contain."""
SPECIFIC_FLOOR = 4
"""Least specificity of a memory that materially changes an answer."""
SAME_TOPIC = 0.5
"""Least share of the memory's words a later turn must repeat to be on the same topic."""


def _overlap(words: list[frozenset[str]], text: str) -> float:
    if not words:
        return 0.0
    present = content_words(text)
    return sum(1 for forms in words if forms & present) / len(words)


def read(candidate: str, context: str) -> Reading:
    """The reader's observations about ``candidate`` in ``context`` (module docstring).

    Args:
        candidate: The candidate memory.
        context: The historical context.

    Returns:
        The reading.
    """
    return _read(candidate, context)


@lru_cache(maxsize=8192)
def _read(candidate: str, context: str) -> Reading:
    turns = parse_turns(context)
    subject = subject_of(candidate, context)
    words = _key_words(candidate)
    ctx = content_words(context)
    support = sum(1 for f in words if f & ctx) / len(words) if words else 0.0
    ctx_low = {w.lower().removesuffix("'s") for w in _WORD.findall(context)}
    ctx_low |= {p.lstrip("0") for d in _DATE.findall(context) for p in d.split("-")}
    ctx_low |= {m for m in _MONTHS for d in _DATE.findall(context) if _month(d) == m}
    unsupported = tuple(s for s in _specifics(candidate) if s.lstrip("0") not in ctx_low)
    scores = [(_overlap(words, t.text), t) for t in turns]
    best_score, best = max(scores, key=lambda s: s[0], default=(0.0, None))
    superseded = ""
    if best is not None and best_score >= SAME_TOPIC:
        mine = content_words(candidate)
        for score, later in scores:
            if later.index <= best.index or score < SAME_TOPIC or later.date <= best.date:
                continue
            news = content_words(later.text) - mine - content_words(best.text)
            if news:
                superseded = later.text
    subject_forms = _forms(subject) if subject != "the user" else frozenset()
    specificity = sum(1 for f in words if not f & GENERIC and not f & subject_forms)
    return Reading(
        unsupported_correction=contradicts(candidate, context),
        subject=subject,
        support=support,
        unsupported=unsupported,
        superseded_by=superseded,
        source_turn=best.text if best is not None and best_score > 0 else "",
        specificity=specificity,
    )


def _affirmed(denied: list[frozenset[str]], text: str) -> float:
    """Share of ``denied`` that ``text`` states outside its own negated clauses."""
    return _overlap(denied, _NEGATED.sub(" ", text))


def contradicts(candidate: str, context: str) -> bool:
    """Whether the memory denies what the context states and asserts what it never says.

    A memory that negates something ("..., not X", "no longer X", "rather than X", "isn't X",
    "never X") denies X. It contradicts its context when a turn of the context states X
    (not inside a negation of its own) and what the memory asserts in its place (its
    content words outside the denial that the stating turn lacks; a leading label, the
    subject and feeling words aside) is mostly absent from the context. A negative fact
    that asserts nothing instead ("Andrew does not have any pets") contradicts nothing;
    "User prefers tea, not coffee." said by the user is supported (the context says "tea"
    and negates "coffee"); a claim that replaces a value the context states by one it never
    mentions is not, however worded.

    Args:
        candidate: The candidate memory.
        context: The historical context.

    Returns:
        True when the memory contradicts the context.
    """
    m = _DENIAL.search(candidate)
    if m is None:
        return False
    denied = _key_words(m.group("denied"))
    if not denied:
        return False
    subject = subject_of(candidate, context)
    mine = _forms(subject) if subject != "the user" else frozenset()
    said = _LABEL.sub("", candidate[: m.start()] + " " + candidate[m.end() :])
    asserted = [
        f
        for f in _key_words(said)
        if not f & GENERIC and not f & mine and not any(f & d for d in denied)
    ]
    stating = [t for t in parse_turns(context) if _affirmed(denied, t.text) >= SAME_TOPIC]
    if not stating:
        return False
    # what the memory puts in the denied value's place: asserted words the stating turn lacks
    frame = content_words(" ".join(t.text for t in stating))
    replacement = [f for f in asserted if not f & frame]
    if not replacement:
        return False  # a negative fact, or the context's own contrast: nothing replaced
    return _overlap(replacement, context) < SUPPORT_FLOOR


def _month(day: str) -> str:
    return _MONTH_ORDER[int(day[5:7]) - 1]
