"""Decoding a JSON object from untrusted model text: linear time, bounded size and depth.

``json.loads`` recurses once per nesting level (a reply of ``[`` x 100,000 raises
``RecursionError``), turns ``NaN`` / ``Infinity`` into floats, keeps the last of duplicate
keys and raises ``ValueError`` (not ``JSONDecodeError``) on integers longer than Python's
digit limit. :func:`load_object` checks the text first and then decodes it:

1. at most ``max_chars`` characters, else rejected before any scan;
2. an optional single fenced code block (```` ```json ... ``` ````) is unwrapped, and what
   remains must start with ``{`` and end with ``}``;
3. one linear pass over the structural characters (no regular expression, no recursion)
   measures the nesting depth, stopping at the first level beyond ``max_depth``;
4. ``json.loads`` then decodes a text whose depth is bounded (its recursion is bounded
   too), rejecting ``NaN`` / ``Infinity`` and duplicate keys, and the result must be an
   object.

Every failure is a :class:`BoundedJSONError` (a ``ValueError``).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["DEFAULT_MAX_DEPTH", "BoundedJSONError", "load_object", "nesting_depth"]

DEFAULT_MAX_DEPTH = 8
"""Deepest nesting accepted by default (every schema of the package is at most 3 deep)."""

_OPEN = frozenset("[{")
_CLOSE = frozenset("]}")


class BoundedJSONError(ValueError):
    """Untrusted text that is not a bounded JSON object."""


def nesting_depth(text: str, limit: int) -> int:
    """The bracket nesting depth of ``text``, bounded by ``limit``.

    The deepest nesting of brackets outside JSON strings, or ``limit + 1`` as soon as
    it exceeds ``limit`` (one linear pass; unbalanced text is measured, not rejected).

    Args:
        text: the text to measure.
        limit: the depth beyond which measuring stops.

    Returns:
        The depth, at most ``limit + 1``.
    """
    depth = deepest = 0
    in_string = False
    quote = -1  # the next '"' at or after position, once looked up
    position, size = 0, len(text)
    while position < size:
        if in_string:
            if quote < position:
                quote = text.find('"', position)
                if quote < 0:
                    return deepest
            slash = text.find("\\", position, quote)
            if slash >= 0:  # skip the escaped character
                position = slash + 2
                continue
            in_string, position = False, quote + 1
            continue
        char = text[position]
        if char == '"':
            in_string = True
        elif char in _OPEN:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return limit + 1
        elif char in _CLOSE:
            depth -= 1
        position += 1
    return deepest


def _unfence(text: str) -> str:
    stripped = text.strip()
    if not stripped.startswith("```"):
        return stripped
    first_newline = stripped.find("\n")
    if first_newline < 0 or not stripped.endswith("```") or len(stripped) < 7:
        return stripped
    label = stripped[3:first_newline].strip().lower()
    if label not in ("", "json"):
        return stripped
    return stripped[first_newline + 1 : -3].strip()


def _no_constants(name: str) -> Any:
    raise BoundedJSONError(f"{name} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise BoundedJSONError(f"duplicate key {key[:40]!r} (conflicting values)")
        out[key] = value
    return out


def load_object(text: str, *, max_chars: int, max_depth: int = DEFAULT_MAX_DEPTH) -> dict[str, Any]:
    """The JSON object ``text`` holds (bare or alone in one fenced code block).

    Args:
        text: a model reply.
        max_chars: the longest text read.
        max_depth: the deepest bracket nesting read.

    Returns:
        The object.

    Raises:
        BoundedJSONError: not text, too long, too deep, or not one JSON object.
    """
    if not isinstance(text, str):
        raise BoundedJSONError(f"expected text, got {type(text).__name__}")
    if len(text) > max_chars:
        raise BoundedJSONError(f"{len(text)} characters exceed the cap of {max_chars}")
    body = _unfence(text)
    if not body.startswith("{") or not body.endswith("}"):
        raise BoundedJSONError("not a JSON object (it must start with '{' and end with '}')")
    if nesting_depth(body, max_depth) > max_depth:
        raise BoundedJSONError(f"nested deeper than {max_depth} levels")
    try:
        value = json.loads(body, parse_constant=_no_constants, object_pairs_hook=_unique_keys)
    except BoundedJSONError:
        raise
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, the int digit limit
        raise BoundedJSONError(f"not JSON: {str(exc)[:200]}") from None
    if not isinstance(value, dict):
        raise BoundedJSONError(f"expected a JSON object, got {type(value).__name__}")
    return value
