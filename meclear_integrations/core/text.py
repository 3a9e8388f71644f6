"""Text every exit can carry: lone surrogates made UTF-8 safe."""

from __future__ import annotations

__all__ = ["utf8_safe"]


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
