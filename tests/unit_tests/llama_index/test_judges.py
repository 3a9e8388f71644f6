"""LlamaIndex LLM judges: structured verdicts through a required tool call on
function-calling LLMs, the nonce-bound verdict line otherwise, failures explicit."""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM, MockLLM

from meclear_integrations.judges import VerdictParseError
from meclear_integrations.judges.parsing import VERDICT_SCHEMA
from meclear_integrations.llama_index import (
    LlamaIndexReferenceFreeJudge,
    LlamaIndexReferenceJudge,
    LlamaIndexTextModel,
)
from meclear_integrations.llama_index.judges import resolve_judge
from meclear_integrations.llama_index.model import LlamaIndexStructuredTextModel, as_text_model


def tool_reply(arguments: dict, seen: list) -> MockFunctionCallingLLM:
    """A function-calling LLM that answers every tool request with ``arguments``."""

    def generate(messages, **kwargs):
        seen.append(kwargs.get("tools"))
        block = ToolCallBlock(tool_call_id="c1", tool_name="respond", tool_kwargs=arguments)
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[block])

    return MockFunctionCallingLLM(response_generator=generate)


def text_reply(text: str) -> MockFunctionCallingLLM:
    return MockFunctionCallingLLM(
        response_generator=lambda messages, **kw: ChatMessage(role="assistant", content=text)
    )


def test_function_calling_llms_get_the_schema_as_a_required_tool() -> None:
    seen: list = []
    llm = tool_reply({"reason": "same month", "correct": True}, seen)
    model = as_text_model(llm)
    assert isinstance(model, LlamaIndexStructuredTextModel)
    judge = LlamaIndexReferenceJudge(llm)
    verdict = judge.score("When?", "December 2023", reference="December 2023")
    assert (verdict.score, verdict.parsed_by, verdict.reason) == (1.0, "structured", "same month")
    (tool,) = seen[0]
    parameters = tool.metadata.get_parameters_dict()
    assert parameters["properties"] == VERDICT_SCHEMA["properties"]
    assert parameters["required"] == ["correct"]
    assert tool.metadata.to_openai_tool()["function"]["name"] == "respond"


async def test_structured_verdicts_async() -> None:
    seen: list = []
    judge = LlamaIndexReferenceFreeJudge(
        tool_reply({"reason": "contradicts", "correct": False}, seen)
    )
    verdict = await judge.ascore("When?", "January 2023", context=[])
    assert (verdict.score, verdict.parsed_by) == (0.0, "structured")
    assert seen


def test_a_reply_without_the_tool_call_is_read_only_as_one_json_object() -> None:
    judge = LlamaIndexReferenceJudge(text_reply('{"reason": "months match", "correct": true}'))
    verdict = judge.score("When?", "December 2023", reference="December 2023")
    assert (verdict.score, verdict.parsed_by) == (1.0, "json")
    prose = LlamaIndexReferenceJudge(text_reply("Yes, correct because the months match."))
    with pytest.raises(VerdictParseError):
        prose.score("When?", "December 2023", reference="December 2023")


def test_unreadable_verdicts_raise() -> None:
    judge = LlamaIndexReferenceJudge(text_reply("Partially correct, hard to say."))
    with pytest.raises(VerdictParseError):
        judge.score("When?", "2023", reference="December 2023")


def test_plain_llms_use_text_and_cannot_be_forced_structured() -> None:
    assert type(as_text_model(MockLLM())) is LlamaIndexTextModel
    with pytest.raises(ValueError, match="function-calling"):
        as_text_model(MockLLM(), structured_output=True)
    assert type(as_text_model(text_reply("x"), structured_output=False)) is LlamaIndexTextModel


def test_resolve_judge() -> None:
    llm = MockLLM()
    assert isinstance(resolve_judge(None, llm, "ref"), LlamaIndexReferenceJudge)
    assert isinstance(resolve_judge(None, llm, None), LlamaIndexReferenceFreeJudge)
    assert resolve_judge(lambda answer: 1.0, None, None).score("q", "a").score == 1.0
    with pytest.raises(ValueError, match="no judge"):
        resolve_judge(None, None, None)
    with pytest.raises(TypeError):
        resolve_judge(42, None, None)
