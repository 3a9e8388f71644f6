"""The neutral text-model interface the LLM judges talk to, and the output formats it honours.

A model answers a prompt with text, synchronously and asynchronously. A model that can
constrain its reply to a JSON schema also offers ``complete_json`` / ``acomplete_json``;
LLM judges then request their verdict as structured output. A model over an
OpenAI-compatible endpoint may also offer JSON mode (``complete_json_object`` /
``acomplete_json_object``: ``response_format`` ``json_object`` carrying the schema, which
llama.cpp servers enforce with a grammar) and name its endpoint (``endpoint``: base URL and
model), so the judges negotiate the format once per endpoint (below). The shape
is the same as the ConMem text-model protocol, so one framework adapter serves both.

Adapters may return a :class:`ModelReply` (a ``str``) that carries the server's
``finish_reason``, so a judge can say a reply was cut at the token limit.

**Negotiating the output format**, remembered per endpoint. A judge asks for its verdict in
the strongest format the endpoint honours, in this order:

1. ``"json_schema"``: the model's native structured output (OpenAI ``response_format``
   ``json_schema``, or a required tool call for function-calling models);
2. ``"json_object"``: JSON mode (``response_format: {"type": "json_object", "schema": ...}``).
   llama.cpp's servers turn the schema into a grammar, so even a 135M model can only
   reply with one object of :data:`~.parsing.VERDICT_SCHEMA`'s shape;
3. ``"text"``: the free-text verdict protocol (:mod:`.protocol`: the nonce line, then the
   one-word call).

A format fails *for the endpoint* (not for the call) when the server rejects it
(:func:`format_rejection`: HTTP 400 / 422 / 500 whose message names ``response_format``,
``json_schema``, ``tools``... or a 400 / 422 / 500 on a format this endpoint has never
answered) or ignores it (a structured call answered with prose). Such a failure raises
:class:`UnsupportedFormatError`, which is permanent (never retried as transient: the same
request fails the same way), and the judge moves to the next format at once. The outcome is
kept in the process-wide :data:`ENDPOINT_FORMATS`, keyed by the endpoint (base URL and
model), so only the first call to an endpoint pays for the negotiation.

A rejection whose message does not name the format (a bare HTTP 500) is only *suspected*:
it is committed once a lower format succeeds on the same endpoint (then the endpoint is up
and the format was the problem); if the lower format fails too, its own error decides.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal, Protocol, runtime_checkable

from ..core.concurrency.workers import in_worker
from ..core.errors import ConfigurationTypeError
from ..core.failures.faults import exception_chain, http_status
from .errors import JudgeError

__all__ = [
    "ENDPOINT_FORMATS",
    "FORMAT_ORDER",
    "EndpointFormats",
    "FormatLadder",
    "FunctionTextModel",
    "ModelReply",
    "OutputFormat",
    "StructuredTextModel",
    "TextModel",
    "UnsupportedFormatError",
    "as_text_model",
    "endpoint_of",
    "format_rejection",
    "is_prose",
    "names_output_format",
    "offered_formats",
    "request",
    "supports_json_object",
    "supports_structured_output",
]


OutputFormat = Literal["json_schema", "json_object", "text"]
FORMAT_ORDER: tuple[OutputFormat, ...] = ("json_schema", "json_object", "text")
"""The formats, strongest first."""

SHORT_AFTER = 2
"""Rescues by the one-word verdict after which an endpoint skips the nonce line."""
REJECTION_STATUS = frozenset({400, 422, 500, 501})
"""HTTP statuses with which servers reject an output format they do not support."""
_FORMAT_WORDS = (
    "response_format",
    "response format",
    "json_schema",
    "json_object",
    "json mode",
    "structured output",
    "grammar",
    "tool_choice",
    "tools",
    "function call",
)


class UnsupportedFormatError(JudgeError):
    """The endpoint rejected or ignored an output format (permanent for that format).

    Args:
        message: What happened.
        output_format: The format that failed.
        endpoint: The endpoint's key (base URL and model), when known.
        confirmed: True when the failure certainly concerns the format (the server named
            it, or answered it with prose); False when only suspected (module docstring).
    """

    transient = False
    """Never retried as transient
    (:func:`~meclear_integrations.core.failures.faults.is_transient`)."""

    def __init__(
        self,
        message: str,
        *,
        output_format: OutputFormat,
        endpoint: str | None = None,
        confirmed: bool = True,
    ) -> None:
        super().__init__(message)
        self.output_format = output_format
        self.endpoint = endpoint
        self.confirmed = confirmed


def names_output_format(exc: BaseException) -> bool:
    """Whether an error's message (or its chain's) names an output-format feature.

    Args:
        exc: The error.

    Returns:
        True when ``response_format``, ``json_schema``, ``tools``... appear in it.
    """
    for link in exception_chain(exc):
        text = " ".join(
            str(part) for part in (link, getattr(link, "body", None), getattr(link, "message", ""))
        ).lower()
        if any(word in text for word in _FORMAT_WORDS):
            return True
    return False


def _status(exc: BaseException) -> int | None:
    for link in exception_chain(exc):
        status = http_status(link)
        if status is not None:
            return status
    return None


def format_rejection(
    exc: BaseException, output_format: OutputFormat, endpoint: str | None
) -> UnsupportedFormatError | None:
    """The :class:`UnsupportedFormatError` a structured call's failure stands for, if any.

    Args:
        exc: The call's error.
        output_format: The format the call asked for (never ``"text"``).
        endpoint: The endpoint's key.

    Returns:
        The error to raise instead, or None when ``exc`` is not a format rejection.
    """
    if output_format == "text" or isinstance(exc, UnsupportedFormatError):
        return exc if isinstance(exc, UnsupportedFormatError) else None
    status = _status(exc)
    if status not in REJECTION_STATUS:
        return None
    named = names_output_format(exc)
    if not named and ENDPOINT_FORMATS.answered(endpoint, output_format):
        return None  # this endpoint has answered the format: a real server error
    where = endpoint or "the endpoint"
    detail = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    return UnsupportedFormatError(
        f"{where} rejected the {output_format} output format with HTTP {status}: {detail}",
        output_format=output_format,
        endpoint=endpoint,
        confirmed=named,
    )


class EndpointFormats:
    """Per endpoint: the formats it rejected and the formats it has answered (thread-safe)."""

    def __init__(self) -> None:
        self._rejected: dict[str, set[str]] = {}
        self._answered: dict[str, set[str]] = {}
        self._rescues: dict[str, int] = {}
        self._lock = threading.Lock()

    def usable(self, endpoint: str | None, offered: Iterable[OutputFormat]) -> list[OutputFormat]:
        """The ``offered`` formats not rejected by ``endpoint``, strongest first.

        Args:
            endpoint: The endpoint's key (None: nothing is remembered).
            offered: The formats the model can ask for.

        Returns:
            The formats to try, in :data:`FORMAT_ORDER`; ``"text"`` is never dropped.
        """
        with self._lock:
            rejected = set(self._rejected.get(endpoint, ())) if endpoint else set()
        wanted = set(offered) | {"text"}
        return [f for f in FORMAT_ORDER if f in wanted and (f == "text" or f not in rejected)]

    def reject(self, endpoint: str | None, output_format: OutputFormat) -> None:
        """Remember that ``endpoint`` does not support ``output_format``."""
        if endpoint and output_format != "text":
            with self._lock:
                self._rejected.setdefault(endpoint, set()).add(output_format)

    def answer(self, endpoint: str | None, output_format: OutputFormat) -> None:
        """Remember that ``endpoint`` answered ``output_format``."""
        if endpoint:
            with self._lock:
                self._answered.setdefault(endpoint, set()).add(output_format)

    def answered(self, endpoint: str | None, output_format: OutputFormat) -> bool:
        """Whether ``endpoint`` has answered ``output_format`` before."""
        with self._lock:
            return bool(endpoint) and output_format in self._answered.get(endpoint or "", ())

    def rejected(self, endpoint: str | None) -> frozenset[str]:
        """The formats ``endpoint`` rejected."""
        with self._lock:
            return frozenset(self._rejected.get(endpoint or "", ()))

    def rescued_by_short(self, endpoint: str | None) -> None:
        """Count a nonce-line reply that was unreadable and a one-word verdict that read.

        After :data:`SHORT_AFTER` such rescues the endpoint's text judgements go straight to
        the one-word call (``judges.protocol``), saving the call it always fails.
        """
        if endpoint:
            with self._lock:
                self._rescues[endpoint] = self._rescues.get(endpoint, 0) + 1

    def short_only(self, endpoint: str | None) -> bool:
        """Whether ``endpoint``'s text judgements skip the nonce line (``rescued_by_short``)."""
        with self._lock:
            return bool(endpoint) and self._rescues.get(endpoint or "", 0) >= SHORT_AFTER

    def clear(self) -> None:
        """Forget every endpoint (tests; a server upgraded in place)."""
        with self._lock:
            self._rejected.clear()
            self._answered.clear()
            self._rescues.clear()


ENDPOINT_FORMATS = EndpointFormats()
"""The process-wide memory of what each endpoint supports."""


def offered_formats(model: object) -> list[OutputFormat]:
    """The structured formats ``model`` can ask for (``"text"`` is always possible).

    Args:
        model: A text model.

    Returns:
        ``json_schema`` when it has ``complete_json``, ``json_object`` when it has
        ``complete_json_object``.
    """
    offered: list[OutputFormat] = []
    if supports_structured_output(model):
        offered.append("json_schema")
    if supports_json_object(model):
        offered.append("json_object")
    return offered


def request(
    model: Any, output_format: OutputFormat, prompt: str, schema: Mapping[str, Any] | None
) -> tuple[Callable[[], Any], Callable[[], Awaitable[Any]]]:
    """The sync call and its async twin asking ``model`` in ``output_format``.

    Args:
        model: A text model offering the format.
        output_format: The format.
        prompt: The prompt.
        schema: The reply's JSON schema (structured formats).

    Returns:
        ``(sync, async)`` callables.
    """
    if output_format == "json_schema":
        return (lambda: model.complete_json(prompt, schema)), (
            lambda: model.acomplete_json(prompt, schema)
        )
    if output_format == "json_object":
        return (lambda: model.complete_json_object(prompt, schema)), (
            lambda: model.acomplete_json_object(prompt, schema)
        )
    return (lambda: model.complete(prompt)), (lambda: model.acomplete(prompt))


def is_prose(reply: object) -> bool:
    """A text reply to a structured request that does not even attempt a JSON object.

    Args:
        reply: The reply.

    Returns:
        True for non-empty text without a ``{``.
    """
    if not isinstance(reply, str):
        return False
    body = reply.strip().strip("`").strip()
    return bool(body) and "{" not in body


class FormatLadder:
    """One call's walk down the formats of its endpoint (module docstring).

    Args:
        model: The text model (its ``endpoint`` keys the memory).
        structured: Whether structured formats may be asked for at all.
        text_fallback: Whether ``"text"`` may end the walk.
    """

    def __init__(self, model: object, *, structured: bool = True, text_fallback: bool = True):
        self.endpoint = endpoint_of(model)
        offered = offered_formats(model) if structured else []
        usable = ENDPOINT_FORMATS.usable(self.endpoint, offered)
        self.formats: list[OutputFormat] = (
            usable if text_fallback else [f for f in usable if f != "text"]
        )
        self._suspected: list[OutputFormat] = []
        self.last: UnsupportedFormatError | None = None

    def failed(self, output_format: OutputFormat, exc: BaseException) -> bool:
        """Record a failed attempt; True when it was the format's fault (try the next).

        Args:
            output_format: The format asked for.
            exc: What the attempt raised.

        Returns:
            True for a rejected or ignored format, False for any other failure.
        """
        rejection = format_rejection(exc, output_format, self.endpoint)
        if rejection is None:
            return False
        self.last = rejection
        if rejection.confirmed:
            ENDPOINT_FORMATS.reject(self.endpoint, output_format)
        else:
            self._suspected.append(output_format)
        return True

    def ignored(self, output_format: OutputFormat, reply: object) -> UnsupportedFormatError:
        """The error of a structured request answered with prose (see :func:`is_prose`).

        Args:
            output_format: The format asked for.
            reply: The prose reply.

        Returns:
            The error (confirmed: the endpoint ignores the format).
        """
        return UnsupportedFormatError(
            f"{self.endpoint or 'the endpoint'} answered a {output_format} request with prose "
            f"(it ignores that format): {str(reply).strip()[:80]!r}",
            output_format=output_format,
            endpoint=self.endpoint,
        )

    def succeeded(self, output_format: OutputFormat) -> None:
        """Record an answered format; commit the rejections suspected before it.

        Args:
            output_format: The format that answered.
        """
        for suspected in self._suspected:
            ENDPOINT_FORMATS.reject(self.endpoint, suspected)
        self._suspected.clear()
        ENDPOINT_FORMATS.answer(self.endpoint, output_format)

    def exhausted(self) -> UnsupportedFormatError:
        """The error when no format is left (``text_fallback=False``).

        Returns:
            The last rejection, or one naming the endpoint.
        """
        return self.last or UnsupportedFormatError(
            f"{self.endpoint or 'the endpoint'} rejected every structured output format "
            "and the text fallback is off",
            output_format="json_schema",
            endpoint=self.endpoint,
        )


JsonSchema = Mapping[str, Any]


@runtime_checkable
class TextModel(Protocol):
    """prompt -> text, sync and async."""

    def complete(self, prompt: str) -> str:
        """Answer ``prompt``.

        Args:
            prompt: The prompt text.

        Returns:
            The reply text.
        """
        ...

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`: answer ``prompt`` on the event loop."""
        ...


@runtime_checkable
class StructuredTextModel(TextModel, Protocol):
    """A text model that can also answer with a JSON object conforming to a schema."""

    def complete_json(self, prompt: str, schema: JsonSchema) -> Mapping[str, Any] | str:
        """Answer with an object (or, when the model ignored the schema, its raw text).

        Args:
            prompt: The prompt text.
            schema: The JSON schema of the reply.

        Returns:
            The decoded object, or the raw text.
        """
        ...

    async def acomplete_json(self, prompt: str, schema: JsonSchema) -> Mapping[str, Any] | str:
        """Async twin of :meth:`complete_json`."""
        ...


class ModelReply(str):
    """A reply's text that also carries the server's ``finish_reason`` (``"length"``: cut).

    Args:
        text: The reply text.
        finish_reason: Why generation stopped, when the server said.

    Example:
        >>> from meclear_integrations.judges.model import ModelReply
        >>> reply = ModelReply("The answer is", finish_reason="length")
        >>> reply, reply.finish_reason
        ('The answer is', 'length')
    """

    finish_reason: str | None

    def __new__(cls, text: str, finish_reason: str | None = None) -> ModelReply:
        """The reply ``text`` carrying ``finish_reason``."""
        reply = super().__new__(cls, text)
        reply.finish_reason = finish_reason
        return reply


def supports_json_object(model: object) -> bool:
    """True when ``model`` offers JSON mode (``complete_json_object`` and its async twin).

    Args:
        model: Any model object.

    Returns:
        Whether the JSON-mode calls exist.
    """
    return callable(getattr(model, "complete_json_object", None)) and callable(
        getattr(model, "acomplete_json_object", None)
    )


def endpoint_of(model: object) -> str | None:
    """The endpoint key a model names (its ``endpoint``: base URL and model), if any.

    Args:
        model: Any model object.

    Returns:
        The key, or None (then nothing is remembered across judges).
    """
    endpoint = getattr(model, "endpoint", None)
    return endpoint if isinstance(endpoint, str) and endpoint else None


def supports_structured_output(model: object) -> bool:
    """True when ``model`` offers the JSON-schema calls.

    Args:
        model: Any model object.

    Returns:
        Whether it has ``complete_json`` and ``acomplete_json``.
    """
    return callable(getattr(model, "complete_json", None)) and callable(
        getattr(model, "acomplete_json", None)
    )


class FunctionTextModel:
    """A :class:`TextModel` over a plain function ``prompt -> str`` (sync or coroutine).

    A sync function runs on a daemon worker under ``acomplete`` (never on the loop).

    Args:
        fn: The function that answers a prompt (sync or ``async``).

    Example:
        >>> from meclear_integrations.judges import FunctionTextModel
        >>> FunctionTextModel(lambda prompt: "Paris").complete("Capital of France?")
        'Paris'
    """

    def __init__(self, fn: Callable[[str], str | Awaitable[str]]) -> None:
        self._fn = fn
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004
        )

    def complete(self, prompt: str) -> str:
        """Complete ``prompt``.

        Args:
            prompt: The prompt text.

        Returns:
            The reply text.
        """
        if self._is_async:
            return asyncio.run(self._fn(prompt))  # type: ignore[arg-type]
        return self._fn(prompt)  # type: ignore[return-value]

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`: complete ``prompt`` on the event loop."""
        if self._is_async:
            return await self._fn(prompt)  # type: ignore[misc]
        return await in_worker(self._fn, prompt)  # type: ignore[arg-type]


def as_text_model(model: TextModel | Callable[[str], str | Awaitable[str]]) -> TextModel:
    """``model`` itself when it implements :class:`TextModel`, else a function wrapper.

    Args:
        model: A :class:`TextModel` or a function ``prompt -> str`` (sync or coroutine).

    Returns:
        The text model.

    Raises:
        ConfigurationTypeError: ``model`` is neither.
    """
    if isinstance(model, TextModel):
        return model
    if callable(model):
        return FunctionTextModel(model)
    raise ConfigurationTypeError(
        f"expected a TextModel (complete/acomplete) or a function prompt -> str, "
        f"got {type(model).__name__}"
    )
