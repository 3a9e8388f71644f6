"""Classifying evaluator failures: transient (retry with backoff) or permanent.

Framework-free: provider exceptions are recognised by duck typing (an HTTP ``status_code``
or ``status`` attribute, a ``response`` with ``headers``, the class names used by the
openai / httpx / requests / aiohttp clients), so no client library is imported.

Transient (:func:`is_transient`):
    ``TimeoutError`` (``asyncio.TimeoutError``), ``ConnectionError`` and its subclasses,
    :class:`~..errors.TransientError`, HTTP 408 / 409 / 425 / 429 / 5xx, and exceptions
    whose class name says timeout, connection, rate limit, overloaded or unavailable
    (``APITimeoutError``, ``APIConnectionError``, ``RateLimitError``,
    ``InternalServerError``, ``ReadTimeout``, ``RemoteProtocolError``...). The chain of
    ``__cause__`` / ``__context__`` is searched, so a wrapped provider error counts.
    An exception class with a boolean ``transient`` attribute decides for itself (the
    judges' ``UnsupportedFormatError`` is never transient, whatever HTTP status it wraps).
Permanent: everything else, notably HTTP 4xx such as 400 / 401 / 403 / 404 / 422
    (retrying cannot help), an unreadable judge verdict, a garbage or empty completion
    that failed to parse, a score outside [0, 1] and programming errors. Unreadable replies
    (:func:`is_unreadable_reply`) are still retried when ``RetryPolicy.retry_unreadable``
    is on, since a sampled model's next reply may parse.

:func:`retry_after` reads the server's requested wait: an exception's ``retry_after``
attribute, else its response's ``retry-after-ms`` (milliseconds) or ``retry-after``
(seconds, or an HTTP date) header.
"""

from __future__ import annotations

import copy
import email.utils
import re
import time
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import MeClearError, RedactedError, ScoreOutOfRangeError, TransientError
from ..redaction import redact

__all__ = [
    "TRANSIENT_STATUS",
    "exception_chain",
    "http_status",
    "is_transient",
    "is_unreadable_reply",
    "redact_chain",
    "retry_after",
    "sanitize",
]

TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""HTTP statuses retried (plus any other 5xx)."""

_TRANSIENT_NAME = re.compile(
    r"timeout|timedout|connect|ratelimit|rate_limit|toomanyrequests|overloaded|unavailable|"
    r"internalserver|servererror|remoteprotocol|readerror|networkerror|temporar",
    re.IGNORECASE,
)


def exception_chain(exc: BaseException, depth: int = 8) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from.

    ``exc`` and the exceptions it was raised from (cause, then context), at most
    ``depth``, each once.

    Args:
        exc: an exception.
        depth: the most links followed.

    Returns:
        ``exc``, then its causes and contexts.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and len(seen) < depth and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an exception carries, if any.

    The HTTP status an exception carries (``status_code``, ``status``, or its
    response's), if any.

    Args:
        exc: an exception.

    Returns:
        The status code, or None.
    """
    for holder in (exc, getattr(exc, "response", None)):
        for name in ("status_code", "status"):
            value = getattr(holder, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value < 600:
                return value
    return None


def _one_is_transient(exc: BaseException) -> bool | None:
    if isinstance(exc, RedactedError):
        return exc.transient
    declared = getattr(type(exc), "transient", None)
    if isinstance(declared, bool):  # a class that says it (e.g. an unsupported output format)
        return declared
    if isinstance(exc, TransientError | TimeoutError | ConnectionError):
        return True
    if isinstance(exc, ScoreOutOfRangeError):
        return False
    status = http_status(exc)
    if status is not None:
        return status in TRANSIENT_STATUS or status >= 500
    if any(_TRANSIENT_NAME.search(cls.__name__) for cls in type(exc).__mro__[:-2]):
        return True
    return None


def is_unreadable_reply(exc: BaseException) -> bool:
    """Whether the failure is a model reply that could not be read.

    True when the failure is a model reply that could not be read (an exception in the
    chain sets ``unreadable_reply = True``, as the judges' ``VerdictParseError`` does): a
    sampled model's next reply may parse, so :class:`RetryPolicy.retry_unreadable` can
    retry it.

    Args:
        exc: an exception.

    Returns:
        True for an unreadable reply.
    """
    return any(getattr(link, "unreadable_reply", False) is True for link in exception_chain(exc))


def is_transient(exc: BaseException) -> bool:
    """True when retrying the call may succeed (module docstring).

    The first exception in the chain that carries a decision (a known type or an HTTP
    status) decides.

    Args:
        exc: an exception.

    Returns:
        True when a retry may succeed.
    """
    for link in exception_chain(exc):
        decision = _one_is_transient(link)
        if decision is not None:
            return decision
    return False


def _headers(exc: BaseException) -> Mapping[str, Any] | None:
    for holder in (getattr(exc, "response", None), exc):
        headers = getattr(holder, "headers", None)
        if headers is not None and callable(getattr(headers, "get", None)):
            return headers  # type: ignore[no-any-return]
    return None


def _seconds(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return max(0.0, float(value))
    text = str(value).strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked to wait before retrying, or None (module docstring).

    Args:
        exc: an exception.

    Returns:
        Seconds, or None.
    """
    for link in exception_chain(exc):
        explicit = _seconds(getattr(link, "retry_after", None))
        if explicit is not None:
            return explicit
        headers = _headers(link)
        if headers is None:
            continue
        millis = _seconds(headers.get("retry-after-ms"))
        if millis is not None:
            return millis / 1000.0
        seconds = _seconds(headers.get("retry-after"))
        if seconds is not None:
            return seconds
    return None


def sanitize(exc: BaseException) -> RedactedError:
    """A :class:`RedactedError` standing in for ``exc``.

    Its message is ``"<Type>: <redacted message>"``,
    with its transient classification, retry-after, HTTP status and unreadable-reply mark;
    raise it ``from None`` where a framework records the exception (traces) so no
    unredacted chain is kept.

    Args:
        exc: an exception whose message may hold secrets.

    Returns:
        The stand-in.
    """
    if isinstance(exc, RedactedError):
        return exc
    return RedactedError(
        f"{type(exc).__name__}: {redact(_text(exc))}"[:2000],
        original_type=type(exc).__name__,
        transient=is_transient(exc),
        retry_after=retry_after(exc),
        status_code=http_status(exc),
        unreadable_reply=is_unreadable_reply(exc),
    )


_CHAIN_DEPTH = 8


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # a broken __str__ must not break error handling
        return f"<{type(exc).__name__} with an unprintable message>"


def _clean(exc: BaseException) -> bool:
    text = _text(exc)
    return redact(text) == text


def _stand_in(exc: BaseException) -> BaseException:
    """A copy of ``exc`` with a redacted message.

    Same type and attributes, or a
    :class:`RedactedError` when the type cannot be copied or still prints a secret.
    """
    if _clean(exc):
        try:
            return copy.copy(exc)
        except Exception:
            return sanitize(exc)
    try:
        twin = copy.copy(exc)
        twin.args = (redact(_text(exc)),)
        if _clean(twin):
            return twin
    except Exception:
        pass
    return sanitize(exc)


def redact_chain(exc: BaseException, *, _depth: int = 0) -> BaseException:
    """``exc`` made safe to surface.

    Every exception in its ``__cause__`` / ``__context__``
    chain (at most 8 deep) whose message holds a secret is replaced by a redacted stand-in
    (same type and attributes when it can be copied, else a :class:`RedactedError` with the
    original's class name and transient classification), tracebacks kept.

    The package's own errors are fixed in place; a foreign exception that needs a change
    is returned as a stand-in and the original is left untouched. A clean chain is
    returned as is, so types and causes are preserved whenever nothing leaks.

    Args:
        exc: an exception.

    Returns:
        ``exc`` itself when nothing in its chain holds a secret, else a stand-in.
    """
    cause, context = exc.__cause__, exc.__context__
    if _depth < _CHAIN_DEPTH:
        new_cause = redact_chain(cause, _depth=_depth + 1) if cause is not None else None
        new_context = redact_chain(context, _depth=_depth + 1) if context is not None else None
    else:  # deeper links are dropped rather than kept unchecked
        new_cause = new_context = None
    clean = _clean(exc)
    if clean and new_cause is cause and new_context is context:
        return exc
    target: BaseException
    if isinstance(exc, MeClearError):
        if not clean:
            exc.args = (redact(_text(exc)),)
        target = exc
    else:
        target = _stand_in(exc)
        target.__traceback__ = exc.__traceback__
        target.__suppress_context__ = exc.__suppress_context__
    target.__cause__ = new_cause
    target.__context__ = new_context
    return target
