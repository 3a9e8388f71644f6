"""Reading a judge's verdict from its own output structure, never from the data it judged.

- **Structured output** (a model with ``complete_json``: a JSON-schema reply or a tool
  call): the verdict is the ``correct`` field of :class:`VerdictSchema`, a boolean (the
  strings ``"true"`` / ``"false"`` are accepted); nothing else in the object is read.
- **A structured call answered with text** (the model ignored the schema): read only when
  the whole reply is one JSON object (bare or alone in one fenced code block), decoded by
  :func:`~meclear_integrations.core.bounded_json.load_object` (at most
  :data:`MAX_JSON_REPLY_CHARS` characters, nesting depth at most 4, duplicate keys
  rejected as conflicting).
- **JSON mode** (``"json_object"``, :mod:`.model`): the request carries
  :data:`GRAMMAR_VERDICT_SCHEMA` (llama.cpp servers constrain decoding with it); the reply is
  read like a structured call answered with text.
- **Free text**: the nonce-bound final verdict line of :mod:`.protocol`
  (:func:`~.protocol.parse_verdict`), else the one-word verdict call of
  :mod:`.protocol`.

A structured request answered with prose (not even an attempt at an object) means the
endpoint ignores that format (:func:`~.formats.is_prose`): the judge moves to the next
format. A reply the
server cut at its token limit (``finish_reason == "length"``, carried by
:class:`~.model.ModelReply`) says so in its error (:func:`with_cut_note`).

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
    "GRAMMAR_VERDICT_SCHEMA",
    "MAX_GRAMMAR_REASON_CHARS",
    "MAX_JSON_REPLY_CHARS",
    "VERDICT_SCHEMA",
    "VerdictSchema",
    "parse_verdict",
    "read_structured",
    "verdict_from_object",
    "verdict_from_text",
    "with_cut_note",
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


MAX_GRAMMAR_REASON_CHARS = 300
"""Longest reason a grammar-constrained (JSON mode) verdict may write."""

GRAMMAR_VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "maxLength": MAX_GRAMMAR_REASON_CHARS},
        "correct": {"type": "boolean"},
    },
    "required": ["reason", "correct"],
    "additionalProperties": False,
}
"""The verdict object of a JSON-mode request: the reason bounded, so a constrained model
reaches ``correct`` before any token limit (llama.cpp turns it into a grammar)."""


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


def with_cut_note(exc: VerdictParseError, reply: object) -> VerdictParseError:
    """``exc``, naming the token limit when the server cut ``reply`` there.

    Args:
        exc: The parse error.
        reply: The reply (a :class:`~.model.ModelReply` knows its ``finish_reason``).

    Returns:
        The error to raise.
    """
    if getattr(reply, "finish_reason", None) != "length":
        return exc
    return VerdictParseError(
        f"{exc} (the server cut the reply at its token limit, finish_reason=length: raise "
        "the judge model's max_tokens)",
        raw=exc.raw,
    )


def read_structured(reply: Mapping[str, Any] | str | Any) -> JudgeVerdict:
    """The verdict of a structured call: the reply object, or text holding one object.

    (A prose reply never gets here: the judge's :class:`~.formats.FormatLadder` takes it
    for a format the endpoint ignores.)

    Args:
        reply: The call's reply.

    Returns:
        The verdict.

    Raises:
        VerdictParseError: The reply holds no readable verdict.
    """
    if isinstance(reply, str):
        try:
            return verdict_from_text(reply)
        except VerdictParseError as exc:
            raise with_cut_note(exc, reply) from None
    if hasattr(reply, "model_dump"):
        reply = reply.model_dump()
    if isinstance(reply, Mapping):
        return verdict_from_object(reply, repr(dict(reply))[:2000], structured=True)
    raise VerdictParseError(
        f"the judge model returned {type(reply).__name__}, not text or an object",
        raw=repr(reply),
    )
