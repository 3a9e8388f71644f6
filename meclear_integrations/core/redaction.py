"""Redaction of secrets (API keys, authorization headers, tokens) from what MeClear emits.

Applied at every exit: stage-event payloads, report and failure texts, errors recorded on
traces (the whole ``__cause__`` / ``__context__`` chain, :mod:`.failures.faults`), logs, the task
agent's answers in trace outputs, and admission decisions. It is a best-effort filter for
credentials that leak into exception messages, metadata and answers (a provider client
echoing ``Authorization: Bearer sk-...``, an agent repeating a key it read in a memory); it
is not a data-loss-prevention system.

- :func:`redact` replaces secret-looking substrings of a text with ``[REDACTED]``:

  * provider key formats: OpenAI / Anthropic ``sk-...``, Stripe ``sk_live_`` /
    ``sk_test_`` / ``rk_live_``, Groq ``gsk_``, GitLab ``glpat-``, Google OAuth ``ya29.``,
    Google API ``AIza...``, Perplexity ``pplx-``, Replicate ``r8_``, xAI ``xai-``,
    LangSmith ``lsv2_``, Hugging Face ``hf_``, GitHub ``ghp_`` / ``gho_`` / ...
    / ``github_pat_``, Slack ``xox?-``, AWS ``AKIA`` / ``ASIA``, JWTs, DigitalOcean
    ``dop_v1_`` / ``doo_v1_`` / ``dor_v1_``, Databricks ``dapi``, Shopify ``shpat_`` /
    ``shpss_`` / ..., Twilio ``SK`` + 32 hex, Mailgun ``key-``, and a masked key a provider
    echoes (``sk-proj-****abcd``);
  * hex-bodied keys without a prefix (Azure OpenAI keys, 32 hex digits) when a credential
    word (``key``, ``azure``, ``token``, ``secret``, ``subscription``, ``auth...``) comes
    at most 48 characters before them on the same line (a bare 32-hex string elsewhere is
    kept: it is indistinguishable from an MD5 hash);
  * whatever follows a provider's rejection of a credential (``Incorrect API key
    provided: sk-abc``, ``invalid token: ...``), however short, so a 401 body repeated
    verbatim in an error does not carry the key;
  * bearer / basic credentials and ``Authorization`` / ``Proxy-Authorization`` headers;
  * ``key: value`` / ``key=value`` pairs whose key names a secret (``api_key``,
    ``x-api-key``, ``Ocp-Apim-Subscription-Key``, ``token``, ``password``, ``secret``,
    ``cookie``...);
  * credentials in URLs (``https://user:pw@host``);
  * a generic **high-entropy token** rule (:func:`is_high_entropy`): a run of at least 24
    characters of ``[A-Za-z0-9_+/=-]`` that mixes upper case, lower case and digits,
    switches character class often and spreads its digits (random strings do, words,
    CamelCase identifiers and dates do not), has enough entropy per character and is not
    hexadecimal (hashes, UUIDs and the package's own ``mc-`` content ids are hex).
    Ordinary text, ids and hashes pass unchanged.

- :func:`redact_payload` applies :func:`redact` to every string in a JSON-like structure
  (bounded depth) and replaces the whole value of any mapping entry whose key names a
  secret.

Cost: every pattern is linear in the text (bounded quantifiers after fixed literals, no
nested repetition), and a text longer than :data:`MAX_REDACT_CHARS` is cut to that length
(marked ``[truncated]``) before it is scanned, so redaction time is bounded per call.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

__all__ = [
    "MAX_REDACT_CHARS",
    "REDACTED",
    "is_high_entropy",
    "is_secret_key",
    "redact",
    "redact_payload",
]

REDACTED = "[REDACTED]"
"""What a secret is replaced with."""
MAX_REDACT_CHARS = 100_000
"""Longest text scanned; a longer one is cut to this length first (and marked)."""
_TRUNCATED = " …[truncated]"

_SECRET_NAME = (
    r"(?:ocp-apim-subscription-key|subscription[-_]?key|api[-_ ]?key|apikey|"
    r"access[-_]?token|refresh[-_]?token|auth[-_]?token|id[-_]?token|client[-_]?secret|"
    r"secret[-_]?key|secret|password|passwd|pwd|authorization|cookie|session[-_]?id|"
    r"private[-_]?key|token)"
)
_SECRET_KEY = re.compile(rf"^(?:[\w.-]*[-_.])?{_SECRET_NAME}$", re.IGNORECASE)

_PROVIDER_KEYS = (
    r"sk-[A-Za-z0-9_\-]{12,}",  # OpenAI (sk-proj-...), Anthropic (sk-ant-...)
    r"[sr]k_(?:live|test)_[A-Za-z0-9]{10,}",  # Stripe secret / restricted keys
    r"gsk_[A-Za-z0-9]{16,}",  # Groq
    r"glpat-[A-Za-z0-9_\-]{16,}",  # GitLab personal access token
    r"ya29\.[A-Za-z0-9_\-]{16,}",  # Google OAuth access token
    r"AIza[0-9A-Za-z\-_]{30,}",  # Google API key
    r"pplx-[A-Za-z0-9]{16,}",  # Perplexity
    r"r8_[A-Za-z0-9]{16,}",  # Replicate
    r"xai-[A-Za-z0-9]{16,}",  # xAI
    r"lsv2_[A-Za-z0-9_]{16,}",  # LangSmith
    r"hf_[A-Za-z0-9]{20,}",  # Hugging Face
    r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
    r"github_pat_[A-Za-z0-9_]{20,}",  # GitHub fine-grained token
    r"xox[abprs]-[A-Za-z0-9\-]{10,}",  # Slack
    r"(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key id
    r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # JWT
    r"do[opr]_v1_[A-Fa-f0-9]{16,}",  # DigitalOcean personal / OAuth / refresh tokens
    r"dapi[a-f0-9]{32}(?:-[0-9]{1,2})?",  # Databricks personal access token
    r"shp(?:at|ca|pa|ss)_[A-Fa-f0-9]{16,}",  # Shopify access tokens and shared secrets
    r"SK[0-9a-f]{32}\b",  # Twilio API key SID
    r"key-[0-9A-Za-z]{32}\b",  # Mailgun API key
    r"sk-[A-Za-z0-9_\-]{0,40}\*{3,}[A-Za-z0-9]{0,8}",  # a masked key a provider echoes
)

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Authorization-style headers: keep the header name, drop scheme and credentials.
    (
        re.compile(
            r"((?:proxy-)?authorization[\"']?[ \t]{0,8}[:=][ \t]{0,8}[\"']?)"
            r"(?:(?:bearer|basic|token|digest)[ \t]{1,8})?[^\s\"',;}]{1,4096}",
            re.IGNORECASE,
        ),
        rf"\1{REDACTED}",
    ),
    (
        re.compile(r"\b(bearer|basic)[ \t]{1,8}[A-Za-z0-9\-._~+/]{8,4096}=*", re.IGNORECASE),
        rf"\1 {REDACTED}",
    ),
    # key=value / "key": "value" with a secret-naming key (any prefix: x-api-key, my_token).
    (
        re.compile(
            rf"({_SECRET_NAME}[\"']?[ \t]{{0,8}}[:=][ \t]{{0,8}}[\"']?)([^\s\"',;}}&]{{4,4096}})",
            re.IGNORECASE,
        ),
        rf"\1{REDACTED}",
    ),
    # Credentials embedded in URLs (anchored on the literal "://").
    (re.compile(r"://[^/\s:@]{1,256}:[^/\s@]{1,256}@"), f"://{REDACTED}@"),
    # Well-known key formats.
    (re.compile(r"\b(?:" + "|".join(_PROVIDER_KEYS) + ")"), REDACTED),
    # A provider's rejection of a credential, repeated verbatim (OpenAI's 401: "Incorrect
    # API key provided: sk-abc."): whatever follows, however short.
    (
        re.compile(
            r"((?:incorrect|invalid|wrong|bad|unknown|expired|revoked|malformed)[ \t]{1,8}"
            r"(?:[A-Za-z]{1,24}[ \t]{1,8})?(?:api[-_ ]?)?(?:key|token|credential|secret|password)s?"
            r"(?:[ \t]{1,8}(?:provided|given|supplied|used))?[ \t]{0,8}[:=][ \t]{0,8}[\"'`]?)"
            r"([^\s\"'`,;}]{1,4096})",
            re.IGNORECASE,
        ),
        rf"\1{REDACTED}",
    ),
    # Hex-bodied keys with no prefix of their own (Azure OpenAI / Cognitive Services keys,
    # 32 hex digits): redacted when a credential word comes shortly before, so that
    # hashes and ids elsewhere stay readable.
    (
        re.compile(
            r"((?:key|azure|credential|secret|token|subscription|auth\w{0,12}|password)"
            r"\b[^\n]{0,48}?)(?<![0-9A-Fa-f])[0-9a-fA-F]{32}(?![0-9A-Za-z])",
            re.IGNORECASE,
        ),
        rf"\1{REDACTED}",
    ),
)

_TOKEN = re.compile(r"(?<![A-Za-z0-9_+/=\-])[A-Za-z0-9_+/=\-]{24,}")
_HEX = frozenset("0123456789abcdefABCDEF-")
MIN_ENTROPY_BITS = 3.8
"""Least entropy per character (Shannon, over the token's own characters)."""
MAX_MEAN_RUN = 2.2
"""Longest mean run of one character class (lower / upper / digit / other): random
strings switch class every 1.6 characters on average, words and CamelCase every 2.3+."""
MIN_LETTER_DIGIT_SWITCHES = 0.06
"""Least share of positions where letters and digits alternate (digits are spread through
a random string, and bunched in names such as ``Report2023``)."""


def _char_class(char: str) -> int:
    if char.islower():
        return 0
    if char.isupper():
        return 1
    if char.isdigit():
        return 2
    return 3


def is_high_entropy(token: str) -> bool:
    """Whether ``token`` looks like a random credential.

    True when ``token`` looks like a random credential (module docstring): at least 24
    characters, not hexadecimal, upper case, lower case and digits mixed, class runs at
    most :data:`MAX_MEAN_RUN` long on average, letters and digits alternating on at least
    :data:`MIN_LETTER_DIGIT_SWITCHES` of the positions, and at least
    :data:`MIN_ENTROPY_BITS` bits of entropy per character. About 3 in 100 random
    32-character base-62 strings fail it (the provider formats above do not need it).

    Args:
        token: a word of a text.

    Returns:
        True for a credential-like token.
    """
    n = len(token)
    if n < 24 or set(token) <= _HEX:
        return False
    classes = [_char_class(c) for c in token]
    if not {0, 1, 2} <= set(classes):
        return False
    pairs = list(itertools.pairwise(classes))
    switches = sum(1 for a, b in pairs if a != b)
    letter_digit = sum(1 for a, b in pairs if {a, b} in ({0, 2}, {1, 2}))
    if n / (switches + 1) > MAX_MEAN_RUN or letter_digit < MIN_LETTER_DIGIT_SWITCHES * n:
        return False
    entropy = -sum(c / n * math.log2(c / n) for c in Counter(token).values())
    return entropy >= MIN_ENTROPY_BITS


def _generic(match: re.Match[str]) -> str:
    token = match.group(0)
    return REDACTED if is_high_entropy(token) else token


def is_secret_key(key: object) -> bool:
    """True when a mapping key names a secret (``api_key``, ``Authorization``, ...).

    Args:
        key: a mapping key.

    Returns:
        True for a secret's name.
    """
    return isinstance(key, str) and _secret_name(key)


@functools.lru_cache(maxsize=1024)
def _secret_name(key: str) -> bool:
    return len(key) <= 200 and bool(_SECRET_KEY.match(key.strip()))


def redact(text: str) -> str:
    """``text`` with secret-looking substrings replaced.

    ``text`` with secret-looking substrings replaced by :data:`REDACTED` (texts longer
    than :data:`MAX_REDACT_CHARS` are cut first). Short texts are remembered: a payload's
    ids and labels recur in every event and are scanned once.

    Args:
        text: any text.

    Returns:
        The redacted text.

    Example:
        >>> from meclear_integrations.core.redaction import redact
        >>> redact("key sk-abcdefghijklmnopqrstuvwxyz0123456789")
        'key [REDACTED]'
    """
    if not isinstance(text, str):
        text = str(text)
    return _scan_short(text) if len(text) <= _REMEMBERED_CHARS else _scan(text)


_REMEMBERED_CHARS = 512
"""Longest text whose redaction is remembered."""


def _scan(text: str) -> str:
    if len(text) > MAX_REDACT_CHARS:
        text = text[:MAX_REDACT_CHARS] + _TRUNCATED
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return _TOKEN.sub(_generic, text)


_scan_short = functools.lru_cache(maxsize=4096)(_scan)


_MAX_DEPTH = 50
"""Deeper values are replaced whole."""


def redact_payload(value: Any, *, _depth: int = 0) -> Any:
    """A copy of a JSON-like ``value`` with secrets redacted.

    A copy of a JSON-like ``value`` with every string redacted and every secret-named
    mapping entry replaced by :data:`REDACTED` (other leaf types are returned as is;
    values nested more than 50 levels deep are replaced whole). One walk per payload.

    Args:
        value: a JSON-like value.

    Returns:
        The redacted copy.
    """
    root: list[Any] = [None]
    # (value, container, slot, depth); a tuple's slots are filled in a list first, then
    # the list is frozen by a ``_FREEZE`` entry popped after every child
    stack: list[tuple[Any, Any, Any, Any]] = [(value, root, 0, _depth)]
    while stack:
        item, parent, slot, depth = stack.pop()
        if item is _FREEZE:
            parent[slot] = tuple(depth)  # ``depth`` holds the filled list here
            continue
        if depth > _MAX_DEPTH:
            parent[slot] = REDACTED
        elif isinstance(item, str):
            parent[slot] = redact(item)
        elif isinstance(item, Mapping):
            copy: dict[Any, Any] = {}
            for key, child in item.items():
                if isinstance(key, str) and _secret_name(key):
                    copy[key] = REDACTED
                else:
                    copy[key] = None
                    stack.append((child, copy, key, depth + 1))
            parent[slot] = copy
        elif isinstance(item, list | tuple):
            items: list[Any] = [None] * len(item)
            if isinstance(item, tuple):
                stack.append((_FREEZE, parent, slot, items))
            for index, child in enumerate(item):
                stack.append((child, items, index, depth + 1))
            parent[slot] = items
        else:
            parent[slot] = item
    return root[0]


_FREEZE = object()
"""Marks the stack entry that turns a tuple's filled list into the tuple."""
