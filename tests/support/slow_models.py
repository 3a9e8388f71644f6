"""Sync-only models for the loop-blocking tests (also imported by their subprocesses)."""

from __future__ import annotations

import threading
import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

NEVER = threading.Event()
STARTED: list[float] = []
FINISHED: list[float] = []
"""When :class:`SyncOnlyLLM`'s complete calls started and finished (monotonic clock)."""
RETURNED = "a hung provider call returned"
"""What a hung call prints if anything waits its 60 s out (a process that exits at once never
prints it)."""


class SyncOnlyLLM(CustomLLM):
    """A CustomLLM with only a sync complete (its acomplete is CustomLLM's default)."""

    seconds: float = 2.0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="sync-only")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        STARTED.append(time.monotonic())
        if self.seconds < 0:
            NEVER.wait(60)  # a provider that never returns
            print(RETURNED, flush=True)
        time.sleep(self.seconds)
        FINISHED.append(time.monotonic())
        return CompletionResponse(text="December 2023")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
        raise NotImplementedError


class SyncOnlyChat(BaseChatModel):
    """A LangChain chat model implementing only _generate; it never returns."""

    @property
    def _llm_type(self) -> str:
        return "sync-only"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        NEVER.wait(60)
        print(RETURNED, flush=True)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="x"))])
