"""LlamaIndex LLMs as the neutral text model of the judges (and of the default agent).

:class:`LlamaIndexTextModel` sends a prompt as a completion (``complete`` / ``acomplete``)
or, for chat models (``llm.metadata.is_chat_model``, or ``chat=True``), as one user
message (``chat`` / ``achat``). The async methods await the LLM's own coroutines, so no
call leaves the event loop. LLM calls are spans of LlamaIndex's instrumentation: made
inside the postprocessor, they nest under its span.
"""

from __future__ import annotations

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.llms import LLM

__all__ = ["LlamaIndexTextModel", "as_text_model"]


def _chat_text(response: ChatResponse) -> str:
    return response.message.content or ""


class LlamaIndexTextModel:
    """prompt -> text over a LlamaIndex ``LLM``, sync and async."""

    def __init__(self, llm: LLM, *, chat: bool | None = None) -> None:
        """``chat=None`` follows ``llm.metadata.is_chat_model``."""
        self.llm = llm
        self.chat = bool(llm.metadata.is_chat_model) if chat is None else chat

    @staticmethod
    def _messages(prompt: str) -> list[ChatMessage]:
        return [ChatMessage(role=MessageRole.USER, content=prompt)]

    def complete(self, prompt: str) -> str:
        if self.chat:
            return _chat_text(self.llm.chat(self._messages(prompt)))
        return self.llm.complete(prompt).text

    async def acomplete(self, prompt: str) -> str:
        if self.chat:
            return _chat_text(await self.llm.achat(self._messages(prompt)))
        return (await self.llm.acomplete(prompt)).text


def as_text_model(llm: LLM, *, chat: bool | None = None) -> LlamaIndexTextModel:
    """Wrap ``llm`` as a :class:`~meclear_integrations.judges.TextModel`."""
    if not isinstance(llm, LLM):
        raise TypeError(f"expected a LlamaIndex LLM, got {type(llm).__name__}")
    return LlamaIndexTextModel(llm, chat=chat)
