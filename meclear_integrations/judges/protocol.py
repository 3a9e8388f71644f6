"""The free-text verdict protocol: one final verdict line bound to a per-call nonce.

A judge call without structured output asks the model to give its reason first and then to
end its reply with exactly one line::

    VERDICT <nonce>: CORRECT        or        VERDICT <nonce>: INCORRECT

``<nonce>`` is :data:`NONCE_HEX` hex digits from :mod:`secrets`, fresh for every judge call
and written only into that call's prompt, after every piece of data. The agent never sees
it, and the question, answer and memories were all written before it existed, so no content
of theirs can carry it: nothing they say can be read as the judge's verdict.

:func:`parse_verdict` reads a reply in linear time and bounded size, without recursion and
without any regular expression:

1. a reply longer than :data:`MAX_REPLY_CHARS` is unreadable;
2. the verdict is the reply's last non-blank line, at most :data:`MAX_VERDICT_LINE_CHARS`
   long: ``VERDICT``, the nonce, a colon and ``CORRECT`` / ``INCORRECT`` (case, spacing,
   markdown emphasis and a final period are tolerated; nothing else);
3. the nonce must occur exactly once in the whole reply: a reply that names it again (two
   verdict lines, a retracted verdict, the instruction echoed) is unreadable, never guessed.

Nothing before the verdict line is interpreted: it is kept, capped, as the judge's reason.
Every unreadable reply raises :class:`~meclear_integrations.judges.errors.VerdictParseError`
(retried under ``RetryPolicy.retry_unreadable``, since a sampled judge's next reply usually
follows the format).

Scripted and simulated judges speak the protocol with :func:`read_nonce` (the nonce of a
prompt: its last verdict instruction, which always follows the data) and
:func:`verdict_reply`.
"""

from __future__ import annotations

import secrets

from .base import JudgeVerdict
from .errors import VerdictParseError

__all__ = [
    "MAX_REASON_CHARS",
    "MAX_REPLY_CHARS",
    "MAX_VERDICT_LINE_CHARS",
    "NONCE_HEX",
    "new_nonce",
    "parse_verdict",
    "read_nonce",
    "verdict_instruction",
    "verdict_line",
    "verdict_reply",
]

NONCE_HEX = 12
"""Hex digits of a verdict nonce (48 random bits per judge call)."""
MAX_REPLY_CHARS = 64_000
"""Longest judge reply read; a longer one is unreadable."""
MAX_VERDICT_LINE_CHARS = 200
"""Longest verdict line read."""
MAX_REASON_CHARS = 500
"""The reason kept from the text before the verdict line."""

_KEYWORD = "VERDICT"
_LABELS = {"CORRECT": 1.0, "INCORRECT": 0.0}
_DECOR = " \t*_`'\"."
_INSTRUCTION = "End your reply with this line and nothing after it"
_HEX = frozenset("0123456789abcdef")


def new_nonce() -> str:
    """A fresh verdict nonce (lowercase hex).

    Returns:
        The nonce.
    """
    return secrets.token_hex(NONCE_HEX // 2)


def verdict_line(nonce: str, correct: bool) -> str:
    """The protocol's verdict line.

    Args:
        nonce: The prompt's nonce.
        correct: The verdict.

    Returns:
        ``VERDICT <nonce>: CORRECT`` or ``... INCORRECT``.
    """
    return f"{_KEYWORD} {nonce}: {'CORRECT' if correct else 'INCORRECT'}"


def verdict_reply(nonce: str, correct: bool, *, reason: str = "") -> str:
    """A well-formed reply: the reason (if any), then the verdict line.

    Args:
        nonce: The prompt's nonce.
        correct: The verdict.
        reason: A short reason, written first.

    Returns:
        The reply text.

    Example:
        >>> from meclear_integrations.judges.protocol import verdict_reply
        >>> print(verdict_reply("abc", True, reason="ok"))
        ok
        VERDICT abc: CORRECT
    """
    line = verdict_line(nonce, correct)
    return f"{reason.strip()}\n{line}" if reason.strip() else line


def verdict_instruction(nonce: str) -> str:
    """The closing instruction of a free-text judge prompt (reason first, then the line).

    Args:
        nonce: The prompt's nonce.

    Returns:
        The instruction text.
    """
    return (
        "First give your reason in one or two sentences. "
        f"{_INSTRUCTION}, with CORRECT or INCORRECT:\n"
        f"{verdict_line(nonce, True)}\nor\n{verdict_line(nonce, False)}"
    )


def read_nonce(prompt: str) -> str | None:
    """The nonce of a free-text judge prompt (its last verdict instruction).

    Args:
        prompt: A judge prompt.

    Returns:
        The nonce, or None when the prompt has none (a structured-output prompt, or not a
        judge prompt).
    """
    at = prompt.rfind(_INSTRUCTION)
    if at < 0:
        return None
    start = prompt.find(f"{_KEYWORD} ", at)
    if start < 0:
        return None
    start += len(_KEYWORD) + 1
    nonce = prompt[start : start + NONCE_HEX]
    if len(nonce) != NONCE_HEX or not set(nonce) <= _HEX:
        return None
    return nonce


def _unreadable(why: str, raw: str) -> VerdictParseError:
    return VerdictParseError(f"unreadable judge reply: {why}: {raw[-200:]!r}", raw=raw)


def _label(line: str, nonce: str) -> float | None:
    """The score of a verdict line, or None when it is not this call's verdict line."""
    head, colon, label = line.strip(_DECOR).rpartition(":")
    if not colon:
        return None
    words = [w.strip(_DECOR) for w in head.split()]
    if len(words) != 2 or words[0].upper() != _KEYWORD or words[1].lower() != nonce:
        return None
    return _LABELS.get(label.strip(_DECOR).upper())


def parse_verdict(raw: str, nonce: str) -> JudgeVerdict:
    """Read a free-text judge reply under the protocol (module docstring).

    Args:
        raw: The judge's reply.
        nonce: The nonce of the prompt the reply answers.

    Returns:
        The verdict.

    Raises:
        VerdictParseError: When the reply does not follow the protocol.
    """
    if not isinstance(raw, str):
        raise _unreadable(f"expected text, got {type(raw).__name__}", repr(raw))
    if len(raw) > MAX_REPLY_CHARS:
        raise _unreadable(f"{len(raw)} characters exceed the cap of {MAX_REPLY_CHARS}", raw)
    text = raw.rstrip()
    if not text:
        raise _unreadable("empty reply", raw)
    cut = text.rfind("\n")
    line = text[cut + 1 :]
    if len(line) > MAX_VERDICT_LINE_CHARS:
        raise _unreadable("the last line is too long to be a verdict line", raw)
    score = _label(line, nonce.lower())
    if score is None:
        raise _unreadable("the last line is not this call's verdict line", raw)
    if text.lower().count(nonce.lower()) != 1:
        raise _unreadable("the verdict nonce occurs more than once (conflicting verdicts)", raw)
    reason = text[: max(cut, 0)].strip()[:MAX_REASON_CHARS] or None
    return JudgeVerdict(score=score, raw=raw, parsed_by="label", reason=reason)
