"""Text every exit can carry: lone surrogates made UTF-8 safe, control characters shown."""

from __future__ import annotations

import re

__all__ = ["terminal_safe", "utf8_safe"]

_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]"
)
"""C0 controls but newline and tab, DEL, C1 controls (U+009B is a one-character CSI),
zero-width and bidirectional formatting characters, line / paragraph separators."""


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def terminal_safe(text: str, *, keep: str = "") -> str:
    r"""``text`` with every character a terminal would act on written as ``\uXXXX``.

    Stored text (memory ids, texts, reasons, queries) is hostile input: an escape sequence
    printed raw can write the clipboard (OSC 52), erase or rewrite lines, hide text
    (``ESC[8m``) or reorder it (bidirectional overrides). Every C0 control except newline
    and tab, DEL, every C1 control, zero-width and bidirectional formatting characters and
    U+2028/U+2029 become visible ``\uXXXX`` escapes, which are also valid inside JSON
    strings, so a JSON or CSV output stays parseable and distinct texts stay distinct.

    Args:
        text: any text.
        keep: characters to leave as they are (e.g. ``"\r"`` for a progress bar stream).

    Returns:
        The text, safe to print.

    Example:
        >>> terminal_safe("id\x1b]52;c;aGk=\x07")
        'id\\u001b]52;c;aGk=\\u0007'
    """
    text = utf8_safe(text)
    if keep:
        return _UNSAFE.sub(lambda m: m.group(0) if m.group(0) in keep else _escape(m), text)
    return _UNSAFE.sub(_escape, text)


def utf8_safe(text: str) -> str:
    r"""``text`` with lone surrogates written as backslash escapes.

    ``text`` with each lone surrogate (U+D800..U+DFFF, which UTF-8 cannot encode) written
    as its backslash escape (``\\ud800``); any other text is returned unchanged.

    Retrieved text is hostile input: a lone surrogate would make JSON reports, the ledger,
    callback payloads and trace exporters raise. Escaping keeps distinct texts distinct.

    Args:
        text: Any Python string.

    Returns:
        A string that encodes to UTF-8.

    Example:
        >>> utf8_safe("ok\ud800")
        'ok\\ud800'
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text
