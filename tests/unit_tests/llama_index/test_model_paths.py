"""The LlamaIndex text models write each call once (a step flow): the sync path calls the
LLM's sync method, the async path its native coroutine (a blocking LLM's sync method on a
worker thread), with the same arguments, replies and errors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    MessageRole,
    ToolCallBlock,
)
from llama_index.core.llms.mock import MockFunctionCallingLLM, MockLLM
from llama_index.llms.openai_like import OpenAILike
from pydantic import Field

from meclear_integrations.judges.model import ModelReply, UnsupportedFormatError
from meclear_integrations.llama_index.model import (
    LlamaIndexOpenAITextModel,
    LlamaIndexStructuredTextModel,
    LlamaIndexTextModel,
)

SCHEMA = {"type": "object", "properties": {"correct": {"type": "boolean"}}, "title": "V"}


def _kwargs(kwargs: dict[str, Any]) -> str:
    return repr({k: v for k, v in sorted(kwargs.items()) if k != "tools"})


class Completion(MockLLM):
    """A completion LLM with native coroutines, logging each call."""

    calls: list[tuple[str, str]] = Field(default_factory=list)
    fail: bool = False

    def _reply(self, name: str, prompt: Any, kwargs: dict[str, Any]) -> str:
        self.calls.append((name, f"{prompt} {_kwargs(kwargs)}"))
        if self.fail:
            raise TimeoutError("provider down")
        return f"reply to {prompt}"

    def complete(self, prompt, formatted=False, **kwargs):
        return CompletionResponse(text=self._reply("complete", prompt, kwargs))

    async def acomplete(self, prompt, formatted=False, **kwargs):
        return CompletionResponse(text=self._reply("acomplete", prompt, kwargs))

    def chat(self, messages, **kwargs):
        text = self._reply("chat", messages[-1].content, kwargs)
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text))

    async def achat(self, messages, **kwargs):
        text = self._reply("achat", messages[-1].content, kwargs)
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text))


class Tools(MockFunctionCallingLLM):
    """A function-calling LLM answering every tool request, logging each call."""

    calls: list[tuple[str, str]] = Field(default_factory=list)

    def _reply(self, name: str, tools: Any, kwargs: dict[str, Any]) -> ChatResponse:
        self.calls.append((name, f"{[t.metadata.name for t in tools]} {_kwargs(kwargs)}"))
        block = ToolCallBlock(tool_call_id="c1", tool_name="respond", tool_kwargs={"correct": 1})
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, blocks=[block]))

    def chat_with_tools(self, tools, **kwargs):
        return self._reply("chat_with_tools", tools, kwargs)

    async def achat_with_tools(self, tools, **kwargs):
        return self._reply("achat_with_tools", tools, kwargs)


class OpenAIStub(OpenAILike):
    """An OpenAI-compatible LLM whose chat calls are logged and answered here."""

    calls: list[tuple[str, str]] = Field(default_factory=list)

    def _reply(self, name: str, messages: Any, kwargs: dict[str, Any]) -> ChatResponse:
        self.calls.append((name, f"{messages[-1].content} {_kwargs(kwargs)}"))
        cut = {"choices": [{"finish_reason": "length"}]}
        message = ChatMessage(role=MessageRole.ASSISTANT, content='{"correct": true}')
        return ChatResponse(message=message, raw=cut)

    def chat(self, messages, **kwargs):
        return self._reply("chat", messages, kwargs)

    async def achat(self, messages, **kwargs):
        return self._reply("achat", messages, kwargs)


def _both(model: Any, method: str, *args: Any) -> dict[str, Any]:
    """The reply (or error) of ``method`` and its async twin, and the LLM calls of each."""
    out = {}
    for mode, name in (("sync", method), ("async", "a" + method)):
        model.llm.calls.clear()
        call = getattr(model, name)
        try:
            reply = asyncio.run(call(*args)) if mode == "async" else call(*args)
            result: Any = (type(reply).__name__, reply, getattr(reply, "finish_reason", None))
        except Exception as exc:  # the error is part of what both paths share
            result = (type(exc).__name__, str(exc))
        out[mode] = (result, list(model.llm.calls))
    return out


def _same_calls(out: dict[str, Any], sync_name: str, async_name: str) -> None:
    (s_result, s_calls), (a_result, a_calls) = out["sync"], out["async"]
    assert s_result == a_result
    assert [n for n, _ in s_calls] == [sync_name] and [n for n, _ in a_calls] == [async_name]
    assert [args for _, args in s_calls] == [args for _, args in a_calls]


@pytest.mark.parametrize("chat", [False, True])
@pytest.mark.parametrize("fail", [False, True])
def test_complete_takes_the_same_steps_on_both_paths(chat, fail) -> None:
    llm = Completion()
    llm.fail = fail
    model = LlamaIndexTextModel(llm, chat=chat)
    assert model.native_async
    out = _both(model, "complete", "When?")
    _same_calls(out, "chat" if chat else "complete", "achat" if chat else "acomplete")
    expected = ("TimeoutError", "provider down") if fail else ("str", "reply to When?", None)
    assert out["sync"][0] == expected


def test_a_blocking_llm_is_called_through_its_sync_method_on_a_worker_thread() -> None:
    model = LlamaIndexTextModel(MockLLM(), chat=False)
    assert not model.native_async
    assert asyncio.run(model.acomplete("When?")) == model.complete("When?") == "When?"


def test_complete_json_takes_the_same_steps_on_both_paths() -> None:
    model = LlamaIndexStructuredTextModel(Tools())
    out = _both(model, "complete_json", "When?", SCHEMA)
    _same_calls(out, "chat_with_tools", "achat_with_tools")
    assert out["sync"][0][1] == {"correct": 1}


@pytest.mark.parametrize("tools", [False, True])
def test_the_openai_model_takes_the_same_steps_on_both_paths(tools) -> None:
    model = LlamaIndexOpenAITextModel(
        OpenAIStub(model="m", api_base="http://x/v1", is_chat_model=True)
    )
    model.tools = tools
    if tools:  # a function-calling server: the schema as a required tool
        model.llm = Tools()
        _same_calls(
            _both(model, "complete_json", "When?", SCHEMA), "chat_with_tools", "achat_with_tools"
        )
        return
    out = _both(model, "complete_json", "When?", SCHEMA)
    _same_calls(out, "chat", "achat")
    assert out["sync"][0] == ("ModelReply", ModelReply('{"correct": true}'), "length")
    assert "json_schema" in out["sync"][1][0][1]
    out = _both(model, "complete_json_object", "When?", SCHEMA)
    _same_calls(out, "chat", "achat")
    assert "json_object" in out["sync"][1][0][1]


def test_the_completions_api_refuses_response_formats_on_both_paths() -> None:
    model = LlamaIndexOpenAITextModel(OpenAIStub(model="m", api_base="http://x/v1"), chat=False)
    model.tools = False
    for method in ("complete_json", "complete_json_object"):
        out = _both(model, method, "When?", SCHEMA)
        assert out["sync"] == out["async"]
        assert out["sync"][0][0] == UnsupportedFormatError.__name__ and out["sync"][1] == []
