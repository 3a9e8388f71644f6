"""A scripted LangChain chat model: the simulated world, failing on chosen calls."""

from __future__ import annotations

import threading
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field, PrivateAttr

from meclear_integrations.langchain import SimulatedChatModel


class ScriptedChat(BaseChatModel):
    """Delegates to ``inner``; call n (1-based) in ``faults`` raises / returns that instead.

    A fault is an exception (raised) or a string (returned as the completion). ``every``
    makes a fault apply to every call (e.g. a dead provider)."""

    inner: SimulatedChatModel
    faults: dict[int, Any] = Field(default_factory=dict)
    every: Any = None

    _calls: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def calls(self) -> int:
        return self._calls

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _reply(self, messages: list[BaseMessage]) -> ChatResult:
        with self._lock:
            self._calls += 1
            fault = self.every if self.every is not None else self.faults.get(self._calls)
        if isinstance(fault, BaseException):
            raise fault
        if isinstance(fault, str):
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=fault))])
        return self.inner._generate(messages)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        return self._reply(messages)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        return self._reply(messages)
