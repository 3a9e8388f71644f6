"""The one-word verdict: a second, short judge call for models that cannot copy a nonce line.

A small model (SmolLM2-135M, say) asked for the nonce-bound verdict line of
:mod:`.protocol` ends its reply with a bare ``CORRECT`` instead. Reading that bare word from
the end of a free-text reply would reopen verdict forging: the judge may end its reply by
quoting the answer, and an answer ending in ``CORRECT`` would then decide the verdict.

So the bare word is never read from a reply that reasons or quotes. When the nonce reply is
unreadable, the judge makes one more call: the same fenced prompt, closed by
:func:`short_verdict_instruction` ("reply with exactly one word"). :func:`parse_short_verdict`
accepts that reply only when **the whole reply** is one verdict word (case, markdown
emphasis and a final period tolerated), and only when **no judged datum contains a verdict
word** (the answer, the memories shown: :func:`carries_verdict_word`).

Why forging still fails:

- The parsed span is the entire reply, so nothing the judge quotes can sit beside the
  verdict: a reply that quotes anything is more than one word and is unreadable.
- The only way a one-word reply could be a quotation of the data is that the data holds
  that word; such calls are refused (no verdict, counted) instead of read. So the word read
  is one of the two words the instruction (written after all the data) offered, chosen by the
  judge, never text copied from the answer or a memory.
- What remains is what every judge format shares: data that *persuades* the judge model
  (prompt injection). The fences and the data notice of :mod:`.prompts` address that; no
  parser can.

The round-1 forging attacks (a forged ``VERDICT`` line, a forged JSON object, a forged
label, quoted by the judge) all put a verdict word in the answer, so the short call is
refused for them and the first reply's nonce protocol decides, as before.
"""

from __future__ import annotations

from collections.abc import Iterable

from .base import JudgeVerdict
from .errors import VerdictParseError

__all__ = [
    "MAX_SHORT_REPLY_CHARS",
    "carries_verdict_word",
    "parse_short_verdict",
    "short_verdict_instruction",
]

MAX_SHORT_REPLY_CHARS = 40
"""Longest one-word reply read."""
_LABELS = {"CORRECT": 1.0, "INCORRECT": 0.0}
_DECOR = " \t\r\n*_`'\".!"


def short_verdict_instruction() -> str:
    """The closing instruction of the one-word verdict call.

    (Measured on SmolLM2-135M: a longer instruction that explains both words is echoed back
    whole, which is unreadable; this one gets one word.)

    Returns:
        The instruction text.
    """
    return "Is the candidate answer correct? Reply with exactly one word: CORRECT or INCORRECT."


def _words(text: str) -> set[str]:
    out: set[str] = set()
    word: list[str] = []
    for ch in text.upper() + " ":
        if ch.isalpha():
            word.append(ch)
        elif word:
            out.add("".join(word))
            word = []
    return out


def carries_verdict_word(data: Iterable[str]) -> bool:
    """Whether any datum holds ``correct`` or ``incorrect`` as a word (any case).

    Args:
        data: The judged texts (answer, memories).

    Returns:
        True when a one-word verdict could be a quotation of the data.
    """
    return any(_words(text) & _LABELS.keys() for text in data)


def parse_short_verdict(raw: str) -> JudgeVerdict:
    """Read the reply of the one-word verdict call (module docstring).

    Args:
        raw: The reply.

    Returns:
        The verdict (``parsed_by="word"``).

    Raises:
        VerdictParseError: The reply is not exactly one verdict word.
    """
    if not isinstance(raw, str):
        raise VerdictParseError(
            f"unreadable one-word verdict: expected text, got {type(raw).__name__}", raw=repr(raw)
        )
    word = raw.strip(_DECOR)
    if not word:
        raise VerdictParseError("unreadable one-word verdict: empty reply", raw=raw)
    if len(raw) > MAX_SHORT_REPLY_CHARS or word.upper() not in _LABELS:
        raise VerdictParseError(
            f"unreadable one-word verdict: the reply is not exactly CORRECT or INCORRECT: "
            f"{raw[:80]!r}",
            raw=raw,
        )
    return JudgeVerdict(score=_LABELS[word.upper()], raw=raw, parsed_by="word")
