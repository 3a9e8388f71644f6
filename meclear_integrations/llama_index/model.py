"""LlamaIndex LLMs as the neutral text model of the judges (and of the default agent).

:class:`LlamaIndexTextModel` sends a prompt as a completion (``complete`` / ``acomplete``)
or, for chat models (``llm.metadata.is_chat_model``, or ``chat=True``), as one user
message (``chat`` / ``achat``). The async methods await the LLM's own coroutines when it
has native ones; an LLM whose async methods are ``CustomLLM``'s defaults (they call the
sync method on the event loop, blocking it for the whole call) is called through its sync
method on a daemon worker thread instead (:func:`~meclear_integrations.core.workers.in_worker`),
so a slow or hung provider never blocks the loop, the run's deadline still holds, and the
abandoned call never keeps the process alive (:func:`has_native_async`). LLM calls are
spans of LlamaIndex's instrumentation: made inside the postprocessor, they nest under its
span (the worker runs in a copy of the caller's context).

:class:`LlamaIndexStructuredTextModel` adds ``complete_json`` / ``acomplete_json`` for
function-calling LLMs (``llm.metadata.is_function_calling_model``): the JSON schema becomes
the parameters of one required tool, ``respond``, and the tool call's arguments are the
reply. A reply without a tool call is handed back as its text (the judge reads it only
when it is one JSON object).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.llms import LLM
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.tools import FunctionTool, ToolMetadata

from ..core.errors import ConfigurationError, ConfigurationTypeError
from ..core.workers import in_worker

__all__ = [
    "LlamaIndexStructuredTextModel",
    "LlamaIndexTextModel",
    "as_text_model",
    "has_native_async",
    "supports_function_calling",
]

TOOL_NAME = "respond"
"""Name of the tool whose arguments carry a structured reply."""


def _chat_text(response: ChatResponse) -> str:
    return response.message.content or ""


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

    def complete(self, prompt: str) -> str:
        """Complete ``prompt``.

        Args:
            prompt: The prompt text.

        Returns:
            The reply text.
        """
        if self.chat:
            return _chat_text(self.llm.chat(self._messages(prompt)))
        return self.llm.complete(prompt).text

    async def acomplete(self, prompt: str) -> str:
        """Complete ``prompt`` on the event loop.

        Args:
            prompt: The prompt text.

        Returns:
            The reply text.
        """
        if not self.native_async:  # never run a blocking call on the loop
            return await in_worker(self.complete, prompt)
        if self.chat:
            return _chat_text(await self.llm.achat(self._messages(prompt)))
        return (await self.llm.acomplete(prompt)).text


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

    def complete_json(self, prompt: str, schema: Mapping[str, Any]) -> Mapping[str, Any] | str:
        """Complete ``prompt`` with a reply constrained to the JSON ``schema``.

        Args:
            prompt: The prompt text.
            schema: The JSON schema of the reply (a tool / function-calling schema).

        Returns:
            The decoded object, or the raw text when the model answered in text.
        """
        tool = _schema_tool(schema)
        response = self.llm.chat_with_tools([tool], user_msg=prompt, tool_required=True)
        return self._unpack(response)

    async def acomplete_json(
        self, prompt: str, schema: Mapping[str, Any]
    ) -> Mapping[str, Any] | str:
        """Complete ``prompt`` with a reply constrained to the JSON ``schema``, on the event loop.

        Args:
            prompt: The prompt text.
            schema: The JSON schema of the reply (a tool / function-calling schema).

        Returns:
            The decoded object, or the raw text when the model answered in text.
        """
        tool = _schema_tool(schema)
        response = await self.llm.achat_with_tools([tool], user_msg=prompt, tool_required=True)
        return self._unpack(response)


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
            calling; True requires it.

    Returns:
        A :class:`LlamaIndexStructuredTextModel` when JSON replies are used, else a
        :class:`LlamaIndexTextModel`.

    Raises:
        ConfigurationTypeError: ``llm`` is not a LlamaIndex ``LLM``.
        ConfigurationError: ``structured_output=True`` for an LLM without function calling.

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
    supported = supports_function_calling(llm)
    if structured_output and not supported:
        raise ConfigurationError("structured_output=True needs a function-calling LLM")
    if supported if structured_output is None else structured_output:
        return LlamaIndexStructuredTextModel(llm, chat=chat)
    return LlamaIndexTextModel(llm, chat=chat)
