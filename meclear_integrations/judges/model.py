"""The neutral text-model interface the LLM judges talk to.

A model answers a prompt with text, synchronously and asynchronously. A model that can
constrain its reply to a JSON schema also offers ``complete_json`` / ``acomplete_json``;
LLM judges then request their verdict as structured output. A model over an
OpenAI-compatible endpoint may also offer JSON mode (``complete_json_object`` /
``acomplete_json_object``: ``response_format`` ``json_object`` carrying the schema, which
llama.cpp servers enforce with a grammar) and name its endpoint (``endpoint``: base URL and
model), so the judges negotiate the format once per endpoint (``judges.formats``). The shape
is the same as the ConMem text-model protocol, so one framework adapter serves both.

Adapters may return a :class:`ModelReply` (a ``str``) that carries the server's
``finish_reason``, so a judge can say a reply was cut at the token limit.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from ..core.concurrency.workers import in_worker
from ..core.errors import ConfigurationTypeError

__all__ = [
    "FunctionTextModel",
    "ModelReply",
    "StructuredTextModel",
    "TextModel",
    "as_text_model",
    "endpoint_of",
    "supports_json_object",
    "supports_structured_output",
]

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
        """Answer ``prompt`` on the event loop.

        Args:
            prompt: The prompt text.

        Returns:
            The reply text.
        """
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
        """Async ``complete_json``.

        Args:
            prompt: The prompt text.
            schema: The JSON schema of the reply.

        Returns:
            The decoded object, or the raw text.
        """
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
        """Complete ``prompt`` on the event loop.

        Args:
            prompt: The prompt text.

        Returns:
            The reply text.
        """
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
