"""Which failures fail open and which must be seen at once.

A clearance that cannot finish returns the context unchanged (fail-open) only when the
failure is one that waiting or retrying can heal; anything else is a misconfiguration or a
bug and raises on the first query, whatever the fail-open switch says.

:func:`failure_kind` names the kind of a failure (the exception chain is searched, so a
provider error wrapped by the engine or redacted by an integration still counts):

- ``"abstain"``: the judge's verdicts were inconsistent (the run abstains, ``unverified``);
- ``"budget"``: ``max_evaluator_calls`` / ``max_wall_seconds`` ran out;
- ``"capacity"``: the context holds more than ``max_memories`` memories;
- ``"estimator"``: the attribution estimator failed numerically (``EstimatorError``);
- ``"invalid_retrieval"``: the retriever returned an unusable item for this query
  (``InvalidRetrievalError``: the items come back as they came);
- ``"invalid_score"``: the evaluator returned a score outside [0, 1] (the engine's score
  validation; the run fails open with reason ``invalid_score``);
- ``"circuit_open"``: the provider circuit breaker is open (recent provider outage);
- ``"content_rejected"``: the provider refused the request because of what it carried,
  not because of the settings (:func:`is_content_rejection`): HTTP 413 (request too
  large), or an HTTP 400/422 whose text says the context length was exceeded
  (``context_length_exceeded``, "maximum context length", "prompt is too long"), that a
  content filter fired (``content_filter``, "content management policy") or that a
  string was too long (a memory id). A memory caused it, so the query fails open and the
  failed coalitions name the memories; it says nothing about the provider's health;
- ``"unreadable"``: a model reply could not be read (a verdict that did not parse, a
  response body that is not JSON), after the retries the policy allows;
- ``"transient"``: timeouts, connection errors, HTTP 408/409/425/429/5xx, and a web page
  where an API reply was expected (a proxy's HTML error page: :func:`is_not_api_reply`;
  a component whose first calls all get one raises, see ``guard.policy``);
- ``"permanent"``: everything else: HTTP 400/401/403/404/422 (bad request, credentials,
  permission, unknown model or URL), and exceptions raised by the caller's own agent,
  judge or evaluator code (``AttributeError``, ``TypeError``...).

The same name is used everywhere a failure is reported: the ``kind`` of a report's
``failure`` and of each failed coalition, the document / node metadata, the ``error``
events, the ``FailOpenWarning`` text and the clearance span.

:func:`fails_open` is True for every kind but ``"permanent"``. :func:`describe_permanent`
turns a permanent failure into a message that names the cause and the setting to fix;
integrations raise it as :class:`PermanentFailureError`.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Literal

from ..errors import (
    BudgetExceededError,
    EstimatorError,
    InconsistentVerdictsError,
    InvalidRetrievalError,
    MeClearError,
    RedactedError,
    ScoreOutOfRangeError,
    TooManyMemoriesError,
)
from ..redaction import redact
from .faults import exception_chain, http_status, is_transient, is_unreadable_reply

__all__ = [
    "FailureKind",
    "PermanentFailureError",
    "Role",
    "describe_permanent",
    "fails_open",
    "failure_kind",
    "failure_role",
    "failure_url",
    "is_content_rejection",
    "is_not_api_reply",
    "mark_role",
]

FailureKind = Literal[
    "abstain",
    "budget",
    "capacity",
    "estimator",
    "invalid_retrieval",
    "invalid_score",
    "circuit_open",
    "content_rejected",
    "unreadable",
    "transient",
    "permanent",
]
Role = Literal["agent", "judge", "evaluator"]

ROLE_ATTRIBUTE = "meclear_role"
"""Attribute set on an exception raised by the agent or the judge (see :func:`mark_role`)."""


class CircuitOpenError(MeClearError):
    """The provider circuit breaker is open: no model call is made (fails open)."""


class PermanentFailureError(MeClearError):
    """A failure that retrying cannot heal.

    A failure that retrying cannot heal (credentials, unknown model or URL, invalid
    request, a bug in user code): raised on the first query whatever the fail-open switch
    says. ``kind_detail`` is a short label (``auth``, ``not_found``, ``invalid_request``,
    ``bad_endpoint``, ``user_code``), ``role`` the call that failed (agent, judge or
    evaluator) when known.

    Args:
        message: the cause and the setting to fix.
        kind_detail: what kind of permanent failure (e.g. ``"bad_endpoint"``, ``"user_code"``).
        role: the call that raised it (``agent``, ``judge``, ``evaluator``), if known.
    """

    def __init__(self, message: str, *, kind_detail: str, role: str | None) -> None:
        super().__init__(message)
        self.kind_detail = kind_detail
        self.role = role


def _original_name(exc: BaseException) -> str:
    return getattr(exc, "original_type", None) or type(exc).__name__


def failure_kind(exc: BaseException) -> FailureKind:
    """The kind of ``exc`` (module docstring).

    Args:
        exc: a failure.

    Returns:
        One of :data:`FailureKind` (``"transient"``, ``"unreadable"``, ``"budget"``,
        ``"permanent"``, ...).
    """
    chain = list(exception_chain(exc))
    for link in chain:
        if isinstance(link, InconsistentVerdictsError) or (
            getattr(link, "original_type", None) == InconsistentVerdictsError.__name__
        ):
            return "abstain"
        if isinstance(link, BudgetExceededError):
            return "budget"
        if isinstance(link, TooManyMemoriesError):
            return "capacity"
        if isinstance(link, EstimatorError):
            return "estimator"
        if isinstance(link, InvalidRetrievalError):
            return "invalid_retrieval"
        if isinstance(link, CircuitOpenError):
            return "circuit_open"
        if isinstance(link, ScoreOutOfRangeError):
            return "invalid_score"
    if is_content_rejection(exc):
        return "content_rejected"
    if is_unreadable_reply(exc):
        return "unreadable"
    if is_transient(exc):
        return "transient"
    if is_not_api_reply(exc):
        return "transient"
    if any(_undecodable_body(link) for link in chain):
        return "unreadable"
    return "permanent"


_CONTENT_REJECTION = re.compile(
    r"context_length_exceeded|maximum context length|context (?:length|window) "
    r"(?:exceeded|of)|prompt is too long|input is too long|too many (?:input )?tokens|"
    r"input token count|reduce the length of the (?:messages|prompt|input)|"
    r"request too large|payload too large|request entity too large|content[_ ]filter|"
    r"content management policy|content polic(?:y|ies)|responsibleaipolicyviolation|"
    r"string_above_max_length|string too long|exceeds the maximum (?:allowed )?length",
    re.IGNORECASE,
)
_CONTENT_STATUS = frozenset({400, 413, 422})


def _status_in_chain(exc: BaseException) -> int | None:
    return next((s for s in map(http_status, exception_chain(exc)) if s is not None), None)


def is_content_rejection(exc: BaseException) -> bool:
    """Whether the provider refused the request for what it carried (module docstring).

    HTTP 413, or an HTTP 400/422 (or an error without a status) whose text or error
    ``code`` names an exceeded context length, a content filter or a string too long.

    Args:
        exc: a failure.

    Returns:
        True for a content rejection.
    """
    status = _status_in_chain(exc)
    if status == 413:
        return True
    if status is not None and status not in _CONTENT_STATUS:
        return False
    for link in exception_chain(exc):
        code = getattr(link, "code", None)
        text = f"{code if isinstance(code, str) else ''} {_safe_str(link)}"[:20_000]
        if _CONTENT_REJECTION.search(text):
            return True
    return False


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # a broken __str__ must not break classification
        return ""


def is_not_api_reply(exc: BaseException) -> bool:
    """A web page or plain text where an API object was expected (a proxy's error page).

    Args:
        exc: a failure.

    Returns:
        True when the reply was not an API reply.
    """
    return _not_an_api_reply(exc)


_URL = re.compile(r"https?://[^\s'\"<>]{1,200}")


def failure_url(exc: BaseException) -> str | None:
    """The URL a failed call went to, when the exception chain carries it.

    Read from a ``request.url`` / ``response.url`` / ``url`` attribute, else from the text.

    Args:
        exc: a failure.

    Returns:
        The URL (credentials redacted), or None.
    """
    for link in exception_chain(exc):
        for holder in (link, getattr(link, "request", None), getattr(link, "response", None)):
            url = getattr(holder, "url", None)
            if url is not None and str(url).startswith("http"):
                return redact(str(url))[:200]
    for link in exception_chain(exc):
        found = _URL.search(_safe_str(link))
        if found:
            return redact(found.group(0))
    return None


def _undecodable_body(exc: BaseException) -> bool:
    """A provider answered with a body that is not JSON (e.g. an HTML error page)."""
    if isinstance(exc, json.JSONDecodeError):
        return True
    return isinstance(exc, RedactedError) and exc.original_type == "JSONDecodeError"


_NOT_API = (
    "unexpected response type",  # langchain-openai got a str from the openai client
    "'str' object has no attribute 'choices'",  # llama-index-llms-openai, the same
    "<html",
    "<!doctype html",
)


def _not_an_api_reply(exc: BaseException) -> bool:
    """The reply was a web page or plain text where an API object was expected."""
    return any(m in str(link).lower() for link in exception_chain(exc) for m in _NOT_API)


def fails_open(exc: BaseException) -> bool:
    """True when ``exc`` may fail open (every kind except ``"permanent"``).

    Args:
        exc: a failure.

    Returns:
        True unless retrying cannot heal it.
    """
    return failure_kind(exc) != "permanent"


def mark_role(exc: BaseException, role: Role) -> None:
    """Record on ``exc`` which call raised it (kept by the first caller that marks it).

    Args:
        exc: the exception.
        role: ``"agent"``, ``"judge"`` or ``"evaluator"``.
    """
    if getattr(exc, ROLE_ATTRIBUTE, None) is None:
        with contextlib.suppress(AttributeError, TypeError):  # exceptions with slots
            setattr(exc, ROLE_ATTRIBUTE, role)


def failure_role(exc: BaseException) -> str | None:
    """The role recorded by :func:`mark_role` anywhere in the chain, if any.

    Args:
        exc: the exception.

    Returns:
        The role, or None.
    """
    for link in exception_chain(exc):
        role = getattr(link, ROLE_ATTRIBUTE, None)
        if isinstance(role, str):
            return role
    return None


def _root(exc: BaseException) -> BaseException:
    """The innermost exception of the chain (the original error)."""
    chain = list(exception_chain(exc))
    for link in chain:
        if http_status(link) is not None or isinstance(link, RedactedError):
            return link
    return chain[-1]


_STATUS_DETAIL = {
    400: ("invalid_request", "the provider rejected the request as invalid"),
    401: ("auth", "the provider rejected the credentials"),
    403: ("auth", "the provider refused permission"),
    404: ("not_found", "the provider does not know the URL or the model"),
    422: ("invalid_request", "the provider could not process the request"),
}
_STATUS_FIX = {
    "auth": "check the API key (api_key / OPENAI_API_KEY) of the {model} model",
    "not_found": "check base_url (it usually ends in /v1) and the model name of the {model} model",
    "invalid_request": "check the {model} model's settings (model name, parameters)",
}


def describe_permanent(
    exc: BaseException, *, settings: dict[str, str] | None = None
) -> PermanentFailureError:
    """A :class:`PermanentFailureError` naming the cause and the setting to fix.

    ``settings`` maps a role (``agent``, ``judge``, ``evaluator``) to the setting that
    supplies it in the calling component (e.g. ``{"agent": "llm= or agent="}``).

    Args:
        exc: the permanent failure.
        settings: role -> the setting that supplies it.

    Returns:
        The error, raised ``from exc`` by the caller.
    """
    role = failure_role(exc)
    root = _root(exc)
    status = next((s for s in map(http_status, exception_chain(exc)) if s is not None), None)
    status = status or getattr(root, "status_code", None)
    where = (settings or {}).get(role or "", f"the {role} setting" if role else "your settings")
    error = redact(f"{_original_name(root)}: {root}")[:300]
    if isinstance(status, int) and 400 <= status < 500 and status in _STATUS_DETAIL:
        detail, cause = _STATUS_DETAIL[status]
        fix = _STATUS_FIX[detail].format(model=role or "agent/judge")
        message = f"MeClear: {cause} (HTTP {status}): {error}. Fix: {fix} ({where})."
    elif isinstance(status, int) and 400 <= status < 500:
        detail = "invalid_request"
        message = (
            f"MeClear: the provider refused the request (HTTP {status}): {error}. "
            f"Fix: check the {role or 'agent/judge'} model's settings ({where})."
        )
    elif _not_an_api_reply(exc):
        detail = "bad_endpoint"
        message = (
            f"MeClear: the provider answered with something that is not an API reply (an "
            f"HTML page?): {error}. Fix: check base_url (it usually ends in /v1) of the "
            f"{role or 'agent/judge'} model ({where})."
        )
    else:
        detail = "user_code"
        who = f"the {role}" if role else "the agent, judge or evaluator"
        message = (
            f"MeClear: {who} raised {error}. This is not a provider outage, so clearance "
            f"does not fail open on it; fix the code behind {where}."
        )
    return PermanentFailureError(message, kind_detail=detail, role=role)
