"""LlamaIndex LLMs as the neutral text model of the judges (and of the default agent).

:class:`LlamaIndexTextModel` sends a prompt as a completion (``complete`` / ``acomplete``)
or, for chat models (``llm.metadata.is_chat_model``, or ``chat=True``), as one user
message (``chat`` / ``achat``). The async methods await the LLM's own coroutines when it
has native ones; an LLM whose async methods are ``CustomLLM``'s defaults (they call the sync method
on the event loop, blocking it for the whole call) is called through its sync method on a daemon
worker thread instead (:func:`~meclear_integrations.core.concurrency.workers.in_worker`), so a slow
or hung provider never blocks the loop, the run's deadline still holds, and the abandoned call never
keeps the process alive (:func:`has_native_async`). LLM calls are
spans of LlamaIndex's instrumentation: made inside the postprocessor, they nest under its
span (the worker runs in a copy of the caller's context).

:class:`LlamaIndexStructuredTextModel` adds ``complete_json`` / ``acomplete_json`` for
function-calling LLMs (``llm.metadata.is_function_calling_model``): the JSON schema becomes
the parameters of one required tool, ``respond``, and the tool call's arguments are the
reply. A reply without a tool call is handed back as its text (the judge reads it only
when it is one JSON object).

:class:`LlamaIndexOpenAITextModel` serves OpenAI-compatible LLMs (``llama_index.llms.openai``'s
``OpenAI`` and its subclasses, ``OpenAILike`` included): it names its endpoint (API base and
model) and offers ``response_format`` requests: ``json_schema`` (a tool call instead for a
function-calling LLM) and JSON mode (``complete_json_object``: ``json_object`` carrying the
schema, which llama.cpp servers enforce with a grammar), so the judges negotiate
json_schema -> json_object -> text once per endpoint (``judges.model``). A reply the
server cut at its token limit comes back as a
:class:`~meclear_integrations.judges.model.ModelReply` saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.llms import LLM
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.tools import FunctionTool, ToolMetadata

from ..core.concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..core.concurrency.workers import in_worker
from ..core.errors import ConfigurationError, ConfigurationTypeError
from ..judges.model import ModelReply, UnsupportedFormatError

__all__ = [
    "LlamaIndexOpenAITextModel",
    "LlamaIndexStructuredTextModel",
    "LlamaIndexTextModel",
    "as_text_model",
    "has_native_async",
    "supports_function_calling",
]

TOOL_NAME = "respond"
"""Name of the tool whose arguments carry a structured reply."""


def _cut(response: Any) -> bool:
    """Whether the server stopped the reply at its token limit (OpenAI-style ``raw``)."""
    raw = getattr(response, "raw", None)
    choices = raw.get("choices") if isinstance(raw, Mapping) else getattr(raw, "choices", None)
    if not choices:
        return False
    first = choices[0]
    reason = first.get("finish_reason") if isinstance(first, Mapping) else None
    return (reason or getattr(first, "finish_reason", None)) == "length"


def _text(response: Any, text: str | None) -> str:
    text = text or ""
    return ModelReply(text, finish_reason="length") if _cut(response) else text


def _chat_text(response: ChatResponse) -> str:
    return _text(response, response.message.content)


def has_native_async(llm: LLM, *, chat: bool) -> bool:
    """Whether the LLM's ``acomplete`` (``achat`` for chat) is natively async.

    False when it is ``CustomLLM``'s default, which runs the sync method on the event loop.

    Args:
        llm: The LlamaIndex LLM.
        chat: Whether the chat methods are used.

    Returns:
        True when awaiting it never blocks the loop.
    """
    name = "achat" if chat else "acomplete"
    # the class that defines it (LlamaIndex wraps methods, so identity cannot be compared)
    owner = next((c for c in type(llm).__mro__ if name in c.__dict__), None)
    return owner is not CustomLLM


class LlamaIndexTextModel:
    """prompt -> text over a LlamaIndex ``LLM``, sync and async (module docstring).

    Args:
        llm: The LlamaIndex LLM.
        chat: Use ``chat`` / ``achat`` instead of ``complete`` / ``acomplete``; None follows
            ``llm.metadata.is_chat_model``.
    """

    def __init__(self, llm: LLM, *, chat: bool | None = None) -> None:
        self.llm = llm
        self.chat = bool(llm.metadata.is_chat_model) if chat is None else chat
        self.native_async = has_native_async(llm, chat=self.chat)

    @staticmethod
    def _messages(prompt: str) -> list[ChatMessage]:
        return [ChatMessage(role=MessageRole.USER, content=prompt)]

    def _completing(self, prompt: str) -> Steps[str]:
        """:meth:`complete`'s steps: one chat or completion call, then its text."""
        if self.chat:
            messages = self._messages(prompt)
            chat = yield Call(partial(self.llm.chat, messages), partial(self.llm.achat, messages))
            return _chat_text(chat)
        llm = self.llm
        response = yield Call(partial(llm.complete, prompt), partial(llm.acomplete, prompt))
        return _text(response, response.text)

    def complete(self, prompt: str) -> str:
        """Complete ``prompt``.

        Args:
            prompt: The prompt text.

        Returns:
            The reply text.
        """
        return run_steps(self._completing(prompt))

    async def acomplete(self, prompt: str) -> str:
        """:meth:`complete` on the event loop (a blocking LLM's call on a worker thread)."""
        if not self.native_async:  # never run a blocking call on the loop
            return await in_worker(self.complete, prompt)
        return await arun_steps(self._completing(prompt))


@dataclass
class _SchemaToolMetadata(ToolMetadata):
    """Tool metadata whose parameters are a given JSON schema (no pydantic class needed)."""

    parameters: dict[str, Any] = field(default_factory=dict)

    def get_parameters_dict(self) -> dict:
        return dict(self.parameters)


def _respond(**kwargs: Any) -> dict[str, Any]:
    return kwargs


def _schema_tool(schema: Mapping[str, Any]) -> FunctionTool:
    metadata = _SchemaToolMetadata(
        name=TOOL_NAME,
        description="Give your reply as the arguments of this function.",
        fn_schema=None,
        parameters={k: v for k, v in schema.items() if k not in ("title", "description")},
    )
    return FunctionTool(fn=_respond, metadata=metadata)


class LlamaIndexStructuredTextModel(LlamaIndexTextModel):
    """Adds JSON-schema replies through a required tool call (function-calling LLMs).

    Args:
        llm: A function-calling LlamaIndex LLM.
        chat: As in :class:`LlamaIndexTextModel`.
    """

    llm: FunctionCallingLLM

    def _unpack(self, response: ChatResponse) -> Mapping[str, Any] | str:
        calls = self.llm.get_tool_calls_from_response(response, error_on_no_tool_call=False)
        for call in calls:
            if call.tool_name == TOOL_NAME and isinstance(call.tool_kwargs, Mapping):
                return dict(call.tool_kwargs)
        return _chat_text(response)

    def _tool_reply(self, prompt: str, schema: Mapping[str, Any]) -> Steps[Mapping[str, Any] | str]:
        """:meth:`complete_json`'s steps: one required tool call, then its arguments."""
        tools, llm = [_schema_tool(schema)], self.llm
        options: dict[str, Any] = {"user_msg": prompt, "tool_required": True}
        response = yield Call(
            partial(llm.chat_with_tools, tools, **options),
            partial(llm.achat_with_tools, tools, **options),
        )
        return self._unpack(response)

    def complete_json(self, prompt: str, schema: Mapping[str, Any]) -> Mapping[str, Any] | str:
        """Complete ``prompt`` with a reply constrained to the JSON ``schema``.

        Args:
            prompt: The prompt text.
            schema: The JSON schema of the reply (a tool / function-calling schema).

        Returns:
            The decoded object, or the raw text when the model answered in text.
        """
        return run_steps(self._tool_reply(prompt, schema))

    async def acomplete_json(
        self, prompt: str, schema: Mapping[str, Any]
    ) -> Mapping[str, Any] | str:
        """:meth:`complete_json` on the event loop (same arguments and result)."""
        return await arun_steps(self._tool_reply(prompt, schema))


def _openai_class() -> type | None:
    try:
        from llama_index.llms.openai import OpenAI
    except ImportError:  # pragma: no cover - the llama-index extra installs it
        return None
    return OpenAI


def is_openai_compatible(llm: LLM) -> bool:
    """Whether ``llm`` is ``llama_index.llms.openai``'s ``OpenAI`` or a subclass (``OpenAILike``).

    Args:
        llm: The LlamaIndex LLM.

    Returns:
        True when ``response_format`` requests reach an OpenAI-compatible endpoint.
    """
    cls = _openai_class()
    return cls is not None and isinstance(llm, cls)


class LlamaIndexOpenAITextModel(LlamaIndexStructuredTextModel):
    """JSON schema and JSON mode over an OpenAI-compatible LlamaIndex LLM (module docstring).

    Args:
        llm: An ``OpenAI`` / ``OpenAILike`` LLM.
        chat: As in :class:`LlamaIndexTextModel`.
    """

    def __init__(self, llm: LLM, *, chat: bool | None = None) -> None:
        super().__init__(llm, chat=chat)
        self.tools = supports_function_calling(llm)
        base = getattr(llm, "api_base", None) or "api.openai.com"
        self.endpoint = f"{str(base).rstrip('/')}|{getattr(llm, 'model', None)}"
        """The endpoint key the judges remember formats under (API base and model)."""

    @staticmethod
    def _json_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
        body = {k: v for k, v in schema.items() if k not in ("title", "description")}
        return {"type": "json_schema", "json_schema": {"name": "respond", "schema": body}}

    def _no_completion_formats(self, response_format: Mapping[str, Any]) -> None:
        if not self.chat:  # the completions API has no response_format
            raise UnsupportedFormatError(
                f"{self.endpoint} is used through the completions API (is_chat_model=False), "
                "which takes no response_format",
                output_format=response_format["type"],
                endpoint=self.endpoint,
            )

    def _formatting(self, prompt: str, response_format: Mapping[str, Any]) -> Steps[str]:
        """A chat call with ``response_format``, then its text."""
        self._no_completion_formats(response_format)
        messages, options = self._messages(prompt), {"response_format": response_format}
        response = yield Call(
            partial(self.llm.chat, messages, **options),
            partial(self.llm.achat, messages, **options),
        )
        return _chat_text(response)

    def _formatted(self, prompt: str, response_format: Mapping[str, Any]) -> str:
        return run_steps(self._formatting(prompt, response_format))

    async def _aformatted(self, prompt: str, response_format: Mapping[str, Any]) -> str:
        self._no_completion_formats(response_format)
        if not self.native_async:
            return await in_worker(self._formatted, prompt, response_format)
        return await arun_steps(self._formatting(prompt, response_format))

    def _json_reply(self, prompt: str, schema: Mapping[str, Any]) -> Steps[Mapping[str, Any] | str]:
        """:meth:`complete_json`'s steps: a required tool call, else ``json_schema``."""
        if self.tools:
            return (yield from self._tool_reply(prompt, schema))
        return (yield from self._formatting(prompt, self._json_schema(schema)))

    def complete_json(self, prompt: str, schema: Mapping[str, Any]) -> Mapping[str, Any] | str:
        """A required tool call (function-calling LLMs) or a ``json_schema`` response format.

        Args:
            prompt: The prompt text.
            schema: The JSON schema of the reply.

        Returns:
            The decoded object, or the raw text.
        """
        return run_steps(self._json_reply(prompt, schema))

    async def acomplete_json(
        self, prompt: str, schema: Mapping[str, Any]
    ) -> Mapping[str, Any] | str:
        """Async :meth:`complete_json` (same arguments and result)."""
        if self.tools or self.native_async:  # else a blocking chat call: on a worker thread
            return await arun_steps(self._json_reply(prompt, schema))
        return await self._aformatted(prompt, self._json_schema(schema))

    def complete_json_object(self, prompt: str, schema: Mapping[str, Any]) -> str:
        """Complete ``prompt`` in JSON mode (the schema is a grammar on llama.cpp servers).

        Args:
            prompt: The prompt text.
            schema: The JSON schema of the reply.

        Returns:
            The reply text.
        """
        return self._formatted(prompt, {"type": "json_object", "schema": dict(schema)})

    async def acomplete_json_object(self, prompt: str, schema: Mapping[str, Any]) -> str:
        """Async :meth:`complete_json_object` (same arguments and result)."""
        return await self._aformatted(prompt, {"type": "json_object", "schema": dict(schema)})


def supports_function_calling(llm: LLM) -> bool:
    """Whether ``llm`` is a ``FunctionCallingLLM`` that declares function calling.

    Args:
        llm: The LlamaIndex LLM.

    Returns:
        True when structured output through a tool call is available.
    """
    return isinstance(llm, FunctionCallingLLM) and bool(llm.metadata.is_function_calling_model)


def as_text_model(
    llm: LLM, *, chat: bool | None = None, structured_output: bool | None = None
) -> LlamaIndexTextModel:
    """Wrap ``llm`` as a :class:`~meclear_integrations.judges.TextModel`.

    Args:
        llm: The LlamaIndex LLM.
        chat: Use the chat methods; None follows ``llm.metadata.is_chat_model``.
        structured_output: None adds the JSON-schema calls when the LLM supports function
            calling or is OpenAI-compatible; True requires it.

    Returns:
        A :class:`LlamaIndexOpenAITextModel` for an OpenAI-compatible LLM, a
        :class:`LlamaIndexStructuredTextModel` for other function-calling LLMs, else a
        :class:`LlamaIndexTextModel`.

    Raises:
        ConfigurationTypeError: ``llm`` is not a LlamaIndex ``LLM``.
        ConfigurationError: ``structured_output=True`` for an LLM with neither.

    Example:
        ```python
        from meclear_integrations.llama_index import SimulatedLLM, as_text_model
        from meclear_integrations.simulation import redundant_harm_example

        model = as_text_model(SimulatedLLM.from_case(redundant_harm_example()))
        print(type(model).__name__)  # LlamaIndexTextModel
        ```
    """
    if not isinstance(llm, LLM):
        raise ConfigurationTypeError(f"expected a LlamaIndex LLM, got {type(llm).__name__}")
    openai = is_openai_compatible(llm)
    supported = openai or supports_function_calling(llm)
    if structured_output and not supported:
        raise ConfigurationError(
            "structured_output=True needs a function-calling or OpenAI-compatible LLM"
        )
    if supported if structured_output is None else structured_output:
        if openai:
            return LlamaIndexOpenAITextModel(llm, chat=chat)
        return LlamaIndexStructuredTextModel(llm, chat=chat)
    return LlamaIndexTextModel(llm, chat=chat)
