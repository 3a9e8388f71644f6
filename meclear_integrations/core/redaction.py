"""Redaction of secrets (API keys, authorization headers, tokens) from what MeClear emits.

Applied to every stage-event payload, to the error texts of reports, events and logs, and
by the integrations to their trace outputs and error metadata. It is a best-effort filter
for credentials that leak into exception messages and metadata (e.g. a provider client
echoing ``Authorization: Bearer sk-...``); it is not a data-loss-prevention system, and
memory texts are never emitted in the first place.

- :func:`redact` replaces secret-looking substrings of a text with ``[REDACTED]``:
  provider keys (``sk-...``, ``sk-ant-...``, ``lsv2_...``, ``hf_...``, ``ghp_...``,
  ``xox?-...``, ``AIza...``, ``AKIA...``), bearer / basic credentials, JWTs,
  ``key=value`` pairs whose key names a secret (``api_key``, ``token``, ``password``,
  ``secret``, ``authorization``...), and credentials in URLs (``https://user:pw@host``).
- :func:`redact_payload` applies :func:`redact` to every string in a JSON-like structure
  and replaces the whole value of any mapping entry whose key names a secret.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "is_secret_key", "redact", "redact_payload"]

REDACTED = "[REDACTED]"
"""What a secret is replaced with."""

_SECRET_NAME = (
    r"(?:api[-_ ]?key|x-api-key|apikey|access[-_]?token|refresh[-_]?token|auth[-_]?token|"
    r"id[-_]?token|client[-_]?secret|secret[-_]?key|secret|password|passwd|pwd|"
    r"authorization|proxy-authorization|cookie|set-cookie|session[-_]?id|private[-_]?key|"
    r"token)"
)
_SECRET_KEY = re.compile(rf"^(?:[\w.-]*[-_.])?{_SECRET_NAME}$", re.IGNORECASE)

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Authorization-style headers: keep the header name, drop scheme and credentials.
    (
        re.compile(
            r"((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)"
            r"(?:(?:bearer|basic|token|digest)\s+)?[^\s\"',;}]+",
            re.IGNORECASE,
        ),
        rf"\1{REDACTED}",
    ),
    (re.compile(r"\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]{8,}=*", re.IGNORECASE), rf"\1 {REDACTED}"),
    # key=value / "key": "value" with a secret-naming key.
    (
        re.compile(
            rf"(\b[\w.-]*{_SECRET_NAME}[\"']?\s*[:=]\s*[\"']?)([^\s\"',;}}&]{{4,}})",
            re.IGNORECASE,
        ),
        rf"\1{REDACTED}",
    ),
    # Credentials embedded in URLs.
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@", re.IGNORECASE), rf"\1{REDACTED}@"),
    # Well-known key formats.
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{12,}"), REDACTED),
    (re.compile(r"\blsv2_[A-Za-z0-9_]{16,}"), REDACTED),
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"), REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z\-_]{30,}"), REDACTED),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), REDACTED),
)


def is_secret_key(key: object) -> bool:
    """True when a mapping key names a secret (``api_key``, ``Authorization``, ...)."""
    return isinstance(key, str) and bool(_SECRET_KEY.match(key.strip()))


def redact(text: str) -> str:
    """``text`` with secret-looking substrings replaced by :data:`REDACTED`."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_payload(value: Any, *, _depth: int = 0) -> Any:
    """A copy of a JSON-like ``value`` with every string redacted and every secret-named
    mapping entry replaced by :data:`REDACTED` (other leaf types are returned as is)."""
    if _depth > 50:
        return REDACTED
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {
            k: REDACTED if is_secret_key(k) else redact_payload(v, _depth=_depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        items = [redact_payload(v, _depth=_depth + 1) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value
