"""Reading a judge's verdict from its own output structure, never from the data it judged.

- **Structured output** (a model with ``complete_json``: a JSON-schema reply or a tool
  call): the verdict is the ``correct`` field of :class:`VerdictSchema`, a boolean (the
  strings ``"true"`` / ``"false"`` are accepted); nothing else in the object is read.
- **A structured call answered with text** (the model ignored the schema): read only when
  the whole reply is one JSON object (bare or alone in one fenced code block), decoded by
  :func:`~meclear_integrations.core.bounded_json.load_object` (at most
  :data:`MAX_JSON_REPLY_CHARS` characters, nesting depth at most 4, duplicate keys
  rejected as conflicting).
- **Free text**: the nonce-bound final verdict line of :mod:`.protocol`
  (:func:`~.protocol.parse_verdict`).

The question, answer, reference and memories are never parsed: nothing they contain can
change a verdict. Every reply without a readable verdict raises
:class:`~meclear_integrations.judges.errors.VerdictParseError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..core.bounded_json import BoundedJSONError, load_object
from .base import JudgeVerdict
from .errors import VerdictParseError
from .protocol import MAX_REASON_CHARS, parse_verdict

__all__ = [
    "MAX_JSON_REPLY_CHARS",
    "VERDICT_SCHEMA",
    "VerdictSchema",
    "parse_verdict",
    "verdict_from_object",
    "verdict_from_text",
]

MAX_JSON_REPLY_CHARS = 64_000
"""Longest text reply to a structured call that is decoded."""
_MAX_DEPTH = 4
_BOOLEANS = {"true": True, "false": False}


class VerdictSchema(BaseModel):
    """The structured verdict requested from models that support structured output."""

    model_config = ConfigDict(extra="ignore")

    reason: str = ""
    """One or two sentences of justification (asked for before the verdict)."""
    correct: bool
    """Whether the answer is judged correct."""


VERDICT_SCHEMA: dict[str, Any] = VerdictSchema.model_json_schema()
"""JSON schema of :class:`VerdictSchema`, as passed to ``complete_json``."""


def _describe(obj: Mapping[str, Any]) -> str:
    return repr({str(k)[:40]: str(v)[:80] for k, v in list(obj.items())[:8]})


def verdict_from_object(obj: Mapping[str, Any], raw: str, *, structured: bool) -> JudgeVerdict:
    """The verdict of a decoded reply object: its ``correct`` field.

    Args:
        obj: The decoded reply object.
        raw: The raw reply text (kept on the error).
        structured: Whether the reply came from a structured-output call.

    Returns:
        The verdict.

    Raises:
        VerdictParseError: When ``correct`` is missing or not a boolean.
    """
    correct = obj.get("correct")
    if isinstance(correct, str):
        correct = _BOOLEANS.get(correct.strip().lower())
    if not isinstance(correct, bool):
        raise VerdictParseError(
            f"the judge's reply object carries no boolean 'correct': {_describe(obj)}", raw=raw
        )
    reason = obj.get("reason")
    return JudgeVerdict(
        score=float(correct),
        raw=raw,
        parsed_by="structured" if structured else "json",
        reason=reason[:MAX_REASON_CHARS] if isinstance(reason, str) and reason else None,
    )


def verdict_from_text(raw: str) -> JudgeVerdict:
    """The verdict of a structured call that came back as text.

    The whole reply must be one bounded JSON object (module docstring).

    Args:
        raw: The reply text.

    Returns:
        The verdict.

    Raises:
        VerdictParseError: When the reply is not one readable JSON verdict object.
    """
    try:
        obj = load_object(raw, max_chars=MAX_JSON_REPLY_CHARS, max_depth=_MAX_DEPTH)
    except BoundedJSONError as exc:
        raise VerdictParseError(
            f"the judge's reply to a structured call is not one JSON object ({exc})",
            raw=raw if isinstance(raw, str) else repr(raw),
        ) from None
    return verdict_from_object(obj, raw, structured=False)
