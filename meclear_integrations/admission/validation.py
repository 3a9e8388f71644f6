"""Write validation before any model call: text, not empty, within limits, well formed.

A decision costs 12-16 model calls; input that cannot be a memory must not spend them. Every
writer (``ConMemAdmitter.decide`` / ``adecide``, :class:`~.background.BackgroundAdmission`,
the LangChain and LlamaIndex gates and background writers) checks its candidates here first
and raises a typed error naming the offending field:

- :class:`~.errors.CandidateTypeError` (also a ``TypeError``): the candidate is not a
  ``str`` (bytes, a number, None, a dict...), or the context is neither text nor a sequence
  of ``{"role", "content"}`` turns / ``(role, content)`` pairs with text in them.
- :class:`~.errors.InvalidCandidateError` (a ``ValueError``): ``empty`` (nothing but white
  space), ``too_long`` (more than ``AdmissionConfig.max_candidate_chars`` characters, default
  4,000, or a context over ``max_context_chars``, default 100,000) or ``malformed`` (NUL or
  other control characters, unpaired surrogates that are not UTF-8).

An empty context is allowed (a memory written without a conversation is judged on its own).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .config import DEFAULT_MAX_CANDIDATE_CHARS, DEFAULT_MAX_CONTEXT_CHARS
from .errors import CandidateTypeError, InvalidCandidateError

__all__ = [
    "DEFAULT_MAX_CANDIDATE_CHARS",
    "DEFAULT_MAX_CONTEXT_CHARS",
    "validate_candidate",
    "validate_context",
    "validate_write",
]


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _text(value: Any, field: str, limit: int, *, allow_empty: bool) -> str:
    if not isinstance(value, str):
        raise CandidateTypeError(
            field, "not_text", f"expected text (str), got {type(value).__name__}"
        )
    if not allow_empty and not value.strip():
        what = "empty" if not value else "empty (only white space)"
        raise InvalidCandidateError(field, "empty", f"the text is {what}")
    if len(value) > limit:
        raise InvalidCandidateError(
            field, "too_long", f"{len(value):,} characters, the limit is {limit:,}"
        )
    bad = _CONTROL.search(value)
    if bad is not None:
        raise InvalidCandidateError(
            field,
            "malformed",
            f"control character U+{ord(bad.group()):04X} at position {bad.start()}",
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidCandidateError(
            field, "malformed", f"not valid Unicode text at position {exc.start}"
        ) from None
    return value


def validate_candidate(
    candidate: Any, *, max_chars: int = DEFAULT_MAX_CANDIDATE_CHARS, field: str = "candidate"
) -> str:
    """``candidate`` if it can be a memory, else a typed error naming ``field``.

    Args:
        candidate: The candidate memory.
        max_chars: The longest accepted candidate.
        field: The field name in the error.

    Returns:
        The candidate, unchanged.

    Raises:
        CandidateTypeError: Not a ``str``.
        InvalidCandidateError: Empty, over ``max_chars`` or malformed.
    """
    return _text(candidate, field, max_chars, allow_empty=False)


def validate_context(
    context: Any, *, max_chars: int = DEFAULT_MAX_CONTEXT_CHARS, field: str = "context"
) -> None:
    """Check a historical context: text, or turns with text roles and contents.

    Args:
        context: Text, ``{"role", "content"}`` mappings or ``(role, content)`` pairs.
        max_chars: The longest accepted context (summed over its turns).
        field: The field name in the error.

    Raises:
        CandidateTypeError: Not text, not a sequence of turns, or a turn without text.
        InvalidCandidateError: Too long or malformed.
    """
    if isinstance(context, str):
        _text(context, field, max_chars, allow_empty=True)
        return
    if isinstance(context, bytes | bytearray | Mapping) or not isinstance(context, Sequence):
        raise CandidateTypeError(
            field,
            "not_text",
            f"expected text or a list of turns, got {type(context).__name__}",
        )
    total = 0
    for i, turn in enumerate(context):
        where = f"{field}[{i}]"
        if isinstance(turn, Mapping):
            if "content" not in turn:
                raise CandidateTypeError(where, "not_text", "a turn without 'content'")
            role, content = turn.get("role", "user"), turn["content"]
        elif isinstance(turn, Sequence) and not isinstance(turn, str | bytes) and len(turn) == 2:
            role, content = turn
        else:
            raise CandidateTypeError(
                where,
                "not_text",
                f"expected a {{'role', 'content'}} mapping or a (role, content) pair, "
                f"got {type(turn).__name__}",
            )
        _text(role, f"{where}.role", max_chars, allow_empty=True)
        total += len(_text(content, f"{where}.content", max_chars, allow_empty=True))
        if total > max_chars:
            raise InvalidCandidateError(
                field, "too_long", f"over {max_chars:,} characters in its turns"
            )


def validate_write(
    candidate: Any,
    context: Any,
    *,
    max_candidate_chars: int = DEFAULT_MAX_CANDIDATE_CHARS,
    max_context_chars: int = DEFAULT_MAX_CONTEXT_CHARS,
    prefix: str | None = None,
    candidate_field: str = "candidate",
    context_field: str = "context",
) -> str:
    """Check one write (candidate and context); fields under ``prefix`` for a batch item.

    Args:
        candidate: The candidate memory.
        context: Its historical context.
        max_candidate_chars: The longest accepted candidate.
        max_context_chars: The longest accepted context.
        prefix: The batch item (``documents[2]``), prepended to the field.
        candidate_field: The candidate's field name (``page_content``, ``text``...).
        context_field: The context's field name (``metadata['historical_context']``...).

    Returns:
        The candidate.

    Raises:
        CandidateTypeError: Something is not text.
        InvalidCandidateError: Empty, too long or malformed.
    """
    try:
        text = validate_candidate(candidate, max_chars=max_candidate_chars, field=candidate_field)
        validate_context(context, max_chars=max_context_chars, field=context_field)
    except InvalidCandidateError as exc:
        if prefix is None:
            raise
        raise exc.at(prefix) from None
    return text
