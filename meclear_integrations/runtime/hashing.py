"""Stable, privacy-preserving ids: query ids as hashes, memory content hashes.

A query id is ``q-`` + 32 hex digits of SHA-256 over the query text with its white space
collapsed (or of HMAC-SHA256 with a secret key, so that short, guessable questions cannot
be recovered from the ledger by hashing candidates). The same question asked again gets the
same id; any other wording is a different query. Content hashes are the full SHA-256 hex
digest of a memory's exact text: a memory whose text changed under the same id is a new
record as far as the ledger's evidence is concerned.
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["content_hash", "query_hash"]

QUERY_ID_PREFIX = "q-"


def _normalized(text: str) -> bytes:
    return " ".join(text.split()).encode("utf-8")


def query_hash(text: str, *, key: bytes | str | None = None) -> str:
    """The query id of ``text``: ``q-`` + 32 hex digits (keyed with ``key`` when given).

    Args:
        text: The query text.
        key: A secret key (HMAC), when given.

    Returns:
        The query id.
    """
    data = _normalized(text)
    if key is None:
        digest = hashlib.sha256(b"meclear-query\x1f" + data).hexdigest()
    else:
        secret = key.encode("utf-8") if isinstance(key, str) else key
        digest = hmac.new(secret, data, hashlib.sha256).hexdigest()
    return QUERY_ID_PREFIX + digest[:32]


def content_hash(text: str) -> str:
    """SHA-256 hex digest of a memory's exact text.

    Args:
        text: The memory's text.

    Returns:
        The hex digest.
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
