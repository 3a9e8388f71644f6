"""The stand-in model's text-reading mode: an offline stand-in for a chat model (not an LLM).

:class:`TextReading` is a reader of the package's one offline stand-in model
(:class:`~meclear_integrations.simulation.StandInModel`; :func:`text_reading_model`): the
stand-in dispatches a prompt (judge prompt or not) and writes the reply in the package's
formats; this reader decides the answers and verdicts. Why a mode and not a world: it has no
world to read from (no claims, no memory ids); it reads only the text of the prompts the
package sends (answer, judge and harm-rating prompts) and replies as a chat model would, so
the real-model benchmark runs end to end with no network and no model. It knows nothing a
prompt does not say: no claims, no weights, no reference unless a judge prompt shows one.
Its reading rules stay here, in the harness (the library never imports it).

Answering (:func:`read_answer`), for the question and the memories of an answer prompt:

1. *Question words*: the question's content words and their lemmas (``lemminflect``:
   "did Caroline go" matches "Caroline went").
2. *Relevance* of a memory: how many question words it contains. Memories with at least
   half the best relevance and a third of the question's words (at least one) are
   *matching statements*.
3. *Stated answer* of a matching statement, read from its text with negated phrases
   removed ("..., not 7 May 2023"): where the statement follows the question's declarative
   form (:func:`~.statements.statement`: "Caroline went to the support group ___", "___
   is what the necklace symbolizes"), the words in the blank, up to a clause boundary;
   otherwise the last run of words between question words and clause boundaries
   (";", ":", "that"). Function and hedge words are trimmed at both ends ("on 17 July
   2023" -> "17 July 2023").
4. *Vote*: two stated answers agree when one contains the other (normalised words, in
   order). Each statement adds its relevance to every answer it agrees with, times
   :data:`HEDGE_FACTOR` when it is hedged ("not certain", "vague memory", "perhaps"...).
   The answer with the most support wins; a tie goes to the latest statement (its
   ``date`` attribute, then its place in the prompt). The reply is the shortest stated
   answer of the winning group; with no matching statement, ``"I don't know"``.

Judging is string comparison: with a reference, the candidate is correct when the
normalised reference occurs in it word for word (:func:`judge_correct`); without one, when
the candidate and the reader's own answer on the memories shown contain one another. The
verdict is written by the stand-in in the judges' own protocol
(:mod:`meclear_integrations.judges.protocol`): a reason, then the final ``VERDICT
<nonce>: CORRECT`` line bound to the prompt's nonce; a structured-output judge prompt (no
nonce) gets the JSON object ``{"reason", "correct"}``. Harm rating (the ``llm-direct``
prompt) rates a matching statement whose answer disagrees with the reader's answer 0.9,
every other memory 0.1; the one-call filter prompt (``llm-filter``) gets the JSON list of
the numbers of every other memory (:func:`keep_numbers`). Prompt blocks are found with the package's
:func:`~meclear_integrations.simulation.reader.fenced_block`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from meclear_integrations.core.stopwords import FUNCTION_WORDS
from meclear_integrations.simulation import StandInModel
from meclear_integrations.simulation.reader import fenced_block
from meclear_integrations.simulation.standin import Reply
from meclear_integrations.simulation.world import normalize_answer

__all__ = [
    "ABSTAIN",
    "HEDGE_FACTOR",
    "ReadMemory",
    "TextReading",
    "harm_ratings",
    "judge_correct",
    "keep_numbers",
    "parse_memories",
    "read_answer",
    "reply",
    "text_reading_model",
]

ABSTAIN = "I don't know"
"""The reply when no memory states an answer."""
HEDGE_FACTOR = 0.6
"""Weight of a hedged statement relative to a plain one."""

_HEDGES = (
    "not certain",
    "not sure",
    "no longer sure",
    "vague memory",
    "suspected",
    "perhaps",
    "maybe",
    "thought that",
    "might have",
)
_HEDGE_WORDS = frozenset({"perhaps", "maybe", "probably", "likely", "possibly"})
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?|[;:,.]")
_NEGATED = re.compile(r",?\s*\bnot\s+[^,.;:]*", re.IGNORECASE)
_CLAUSE = frozenset({";", ":", ".", "that"})
"""Words and marks that end a stated answer (a comma also ends one read after a prefix)."""
_BLANK = "XANSWERX"
_ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')


@dataclass(frozen=True)
class ReadMemory:
    """A memory block of a prompt: its attributes and text."""

    attributes: dict[str, str]
    """The block's attributes (``id``, metadata)."""
    text: str
    """The memory's text."""


def parse_memories(block: str) -> list[ReadMemory]:
    """The ``<memory ...>`` blocks of a rendered memories section, in order.

    Args:
        block: The rendered memories section.

    Returns:
        The memories.
    """
    memories: list[ReadMemory] = []
    at = 0
    while (start := block.find("<memory", at)) >= 0:
        head_end = block.find(">\n", start)
        end = block.find("\n</memory>", head_end + 1) if head_end >= 0 else -1
        if end < 0:
            break
        head = block[start + len("<memory") : head_end]
        attributes = {k: v for k, v in _ATTRIBUTE.findall(head)}
        memories.append(ReadMemory(attributes=attributes, text=block[head_end + 2 : end]))
        at = end + len("\n</memory>")
    return memories


@lru_cache(maxsize=65536)
def _forms(word: str) -> frozenset[str]:
    """A word and its lemmas (lower case)."""
    low = word.lower().replace("’", "'")
    low = low[:-2] if low.endswith("'s") else low
    forms = {low}
    try:
        import lemminflect
    except ImportError:  # pragma: no cover - lemminflect is in the bench extra
        return frozenset(forms)
    for lemmas in lemminflect.getAllLemmas(low).values():
        forms.update(lemmas)
    return frozenset(forms)


def _question_words(question: str) -> list[frozenset[str]]:
    """The question's content words, each as its set of forms (counted once)."""
    words: list[frozenset[str]] = []
    for word in _WORD.findall(question):
        forms = _forms(word)
        if _plain(word) and not forms & FUNCTION_WORDS and not any(forms & w for w in words):
            words.append(forms)
    return words


def _content(text: str) -> set[str]:
    words: set[str] = set()
    for word in _WORD.findall(text):
        forms = _forms(word)
        if not forms & FUNCTION_WORDS:
            words |= forms
    return words


@dataclass(frozen=True)
class _Statement:
    position: int
    date: str
    relevance: int
    weight: float
    answer: str
    key: tuple[str, ...]


def _trim(words: list[str]) -> list[str]:
    def filler(word: str) -> bool:
        return (
            word in _CLAUSE or word == "," or bool(_forms(word) & (FUNCTION_WORDS | _HEDGE_WORDS))
        )

    start, end = 0, len(words)
    while start < end and filler(words[start]):
        start += 1
    while end > start and filler(words[end - 1]):
        end -= 1
    return words[start:end]


@lru_cache(maxsize=4096)
def _template(question: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The words before and after the blank of the question's declarative form."""
    try:
        from .statements import statement

        text = statement(question, _BLANK)
    except ImportError:  # pragma: no cover - lemminflect is in the bench extra
        return (), ()
    left, _, right = text.partition(_BLANK)
    return (
        tuple(w.lower() for w in _WORD.findall(left) if _plain(w)),
        tuple(w.lower() for w in _WORD.findall(right) if _plain(w)),
    )


def _find_last(words: list[str], phrase: tuple[str, ...]) -> int:
    """Index of the last occurrence of ``phrase`` in ``words`` (punctuation skipped), or -1."""
    plain = [(i, w.lower()) for i, w in enumerate(words) if _plain(w)]
    n = len(phrase)
    for j in range(len(plain) - n, -1, -1):
        if tuple(w for _, w in plain[j : j + n]) == phrase:
            return plain[j][0]
    return -1


def _plain(word: str) -> bool:
    return word not in _CLAUSE and word != ","


def _from_template(words: list[str], question: str) -> list[str]:
    """The words in the blank of the question's declarative form, when the statement follows it.

    Before its (last) right context back to a clause boundary, or after its left context up to a
    clause boundary or a comma.
    """
    left, right = _template(question)
    content = sum(1 for w in right if not _forms(w) & FUNCTION_WORDS)
    if content >= 2 and (at := _find_last(words, right)) > 0:
        start = at
        while start > 0 and words[start - 1] not in _CLAUSE:
            start -= 1
        return _trim(words[start:at])
    if len(left) >= 2 and (at := _find_last(words, left)) >= 0:
        end, seen = at, 0
        while end < len(words) and seen < len(left):
            seen += _plain(words[end])
            end += 1
        stop = end
        while stop < len(words) and _plain(words[stop]):
            stop += 1
        return _trim(words[end:stop])
    return []


def _stated_answer(text: str, question: str, question_words: set[str]) -> str:
    words = _WORD.findall(_NEGATED.sub("", text))
    found = _from_template(words, question)
    if found:
        return " ".join(w for w in found if _plain(w))
    runs: list[list[str]] = [[]]
    for word in words:
        if word in _CLAUSE or _forms(word) & question_words:
            runs.append([])
        elif word != ",":
            runs[-1].append(word)
    for run in reversed(runs):
        trimmed = _trim(run)
        if trimmed:
            return " ".join(trimmed)
    return ""


def _agree(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    n = len(short)
    return n > 0 and any(long[i : i + n] == short for i in range(len(long) - n + 1))


def _statements(question: str, memories: Sequence[ReadMemory]) -> list[_Statement]:
    asked = _question_words(question)
    question_words = set().union(*asked) if asked else set()

    def words_matched(text: str) -> int:
        present = _content(text)
        return sum(1 for forms in asked if forms & present)

    scored = [(i, m, words_matched(m.text)) for i, m in enumerate(memories)]
    best = max((r for _, _, r in scored), default=0)
    floor = max(1, math.ceil(len(asked) / 3), best / 2)
    statements: list[_Statement] = []
    for position, memory, relevance in scored:
        if relevance < floor:
            continue
        answer = _stated_answer(memory.text, question, question_words)
        key = tuple(normalize_answer(answer).split())
        if not key:
            continue
        hedged = any(h in memory.text.lower() for h in _HEDGES)
        statements.append(
            _Statement(
                position=position,
                date=memory.attributes.get("date", ""),
                relevance=relevance,
                weight=relevance * (HEDGE_FACTOR if hedged else 1.0),
                answer=answer,
                key=key,
            )
        )
    return statements


def _winner(statements: Sequence[_Statement]) -> _Statement | None:
    if not statements:
        return None

    def rank(s: _Statement) -> tuple[float, str, int]:
        support = sum(o.weight for o in statements if _agree(s.key, o.key))
        return (round(support, 9), s.date, s.position)

    top = max(statements, key=rank)
    group = [s for s in statements if _agree(top.key, s.key)]
    return min(group, key=lambda s: (len(s.key), -s.position))


def read_answer(question: str, memories: Sequence[ReadMemory]) -> str:
    """The reader's answer to ``question`` from ``memories`` (module docstring).

    Args:
        question: The question.
        memories: The memories in the prompt.

    Returns:
        The answer.
    """
    winner = _winner(_statements(question, memories))
    return winner.answer if winner is not None else ABSTAIN


def _words(text: str) -> tuple[str, ...]:
    return tuple(normalize_answer(text).split())


def judge_correct(candidate: str, reference: str) -> bool:
    """String comparison: the normalised reference occurs in the candidate word for word.

    Args:
        candidate: The candidate answer.
        reference: The gold answer.

    Returns:
        The verdict.
    """
    ref, cand = _words(reference), _words(candidate)
    return bool(ref) and len(ref) <= len(cand) and _agree(ref, cand)


def harm_ratings(question: str, memories: Sequence[ReadMemory]) -> list[float]:
    """0.9 for a matching statement that disagrees with the reader's answer, else 0.1.

    Args:
        question: The question.
        memories: The memories in the prompt.

    Returns:
        One rating per memory.
    """
    statements = _statements(question, memories)
    winner = _winner(statements)
    disagree = {
        s.position for s in statements if winner is not None and not _agree(s.key, winner.key)
    }
    return [0.9 if i in disagree else 0.1 for i in range(len(memories))]


def keep_numbers(question: str, memories: Sequence[ReadMemory]) -> list[int]:
    """The 1-based numbers of the memories a filter keeps: all but the disagreeing statements.

    Args:
        question: The question.
        memories: The memories in the prompt.

    Returns:
        The numbers of the kept memories (those :func:`harm_ratings` rates 0.1).
    """
    return [i + 1 for i, r in enumerate(harm_ratings(question, memories)) if r < 0.5]


class TextReading:
    """The text-reading reader of the stand-in model (module docstring)."""

    @staticmethod
    def answer(prompt: str) -> str:
        """The reply to a prompt that is not a judge prompt.

        A one-call filter prompt gets the JSON list of the kept numbers, a harm-rating
        prompt the JSON list of ratings, an answer prompt the reader's answer.

        Args:
            prompt: The prompt.

        Returns:
            The reply text.
        """
        question = fenced_block("question", prompt) or ""
        memories = parse_memories(fenced_block("memories", prompt) or "")
        if "numbers of the memories to keep" in prompt:
            return json.dumps(keep_numbers(question, memories))
        if "JSON list of" in prompt:
            return json.dumps(harm_ratings(question, memories))
        return read_answer(question, memories)

    @staticmethod
    def judge(prompt: str, candidate: str) -> tuple[bool, str]:
        """String comparison with the reference, or with the reader's own answer.

        Args:
            prompt: The judge prompt.
            candidate: The candidate answer.

        Returns:
            (the verdict, its one-line reason).
        """
        reference = fenced_block("reference_answer", prompt)
        if reference is not None:
            return judge_correct(candidate, reference), "the reference occurs in the answer"
        question = fenced_block("question", prompt) or ""
        own = read_answer(question, parse_memories(fenced_block("memories", prompt) or ""))
        agree = own != ABSTAIN and _agree(_words(own), _words(candidate))
        return agree, "the answer agrees with what the memories state"


def text_reading_model() -> StandInModel:
    """A stand-in model in text-reading mode.

    Returns:
        The model.
    """
    return StandInModel(TextReading())


_SHARED = text_reading_model()


def reply(prompt: str) -> Reply:
    """The text-reading stand-in's reply to any of the package's prompts (module docstring).

    Args:
        prompt: The prompt.

    Returns:
        The reply (text, and the verdict of a judge prompt).
    """
    return _SHARED.respond(prompt)
