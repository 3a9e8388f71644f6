"""What a query costs in model calls, agent and judge apart, and in tokens when the provider
reports usage: the report, the document metadata and the clearance end event agree with
the calls the models actually received; a temperature-0 agent answers each prompt once;
an unreadable verdict retries the judge only."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableLambda
from llama_index.core.base.llms.types import CompletionResponse
from llama_index.core.llms.callbacks import llm_completion_callback
from pydantic import Field

from meclear_integrations import ClearanceConfig, MeClearEngine
from meclear_integrations.judges import ReferenceFreeLLMJudge, task_evaluator
from meclear_integrations.langchain import ClearingRetriever
from meclear_integrations.llama_index import MeClearPostprocessor
from tests.support import stale_city as scripted
from tests.support.text_models import ScriptedTextModel

FAST = ClearanceConfig(failure={"retry": {"initial_backoff": 0.0, "jitter": 0.0}})
TOKENS_IN, TOKENS_OUT = 40, 3


class UsageChat(BaseChatModel):
    """A temperature-0 chat model answering like ``scripted.majority_answer`` and reporting
    token usage on every reply."""

    temperature: float = 0.0
    prompts: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "usage-chat"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        prompt = "\n".join(str(m.content) for m in messages)
        self.prompts.append(prompt)
        usage = {
            "input_tokens": TOKENS_IN,
            "output_tokens": TOKENS_OUT,
            "total_tokens": TOKENS_IN + TOKENS_OUT,
        }
        message = AIMessage(content=scripted.majority_answer(prompt), usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])


class UsageLLM(scripted.ScriptedLLM):
    """A temperature-0 LlamaIndex LLM reporting usage like the OpenAI client does."""

    temperature: float = 0.0

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        usage = {"prompt_tokens": TOKENS_IN, "completion_tokens": TOKENS_OUT}
        return CompletionResponse(text=scripted.majority_answer(prompt), additional_kwargs=usage)


def _check(report_calls: dict[str, Any], prompts: list[str], judged: list[str]) -> None:
    assert prompts and len(prompts) == len(set(prompts))  # temperature 0: each prompt once
    assert report_calls["agent"] == len(prompts)
    assert report_calls["judge"] == len(judged)
    assert report_calls["total"] == len(prompts) + len(judged)
    agent_tokens = report_calls["tokens"]["agent"]
    assert agent_tokens == {
        "input_tokens": TOKENS_IN * len(prompts),
        "output_tokens": TOKENS_OUT * len(prompts),
        "calls_reported": len(prompts),
    }
    assert "judge" not in report_calls["tokens"]  # the judge is a function: no usage


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_langchain_model_calls_and_tokens(asynchronous: bool) -> None:
    rec = scripted.Recorder()
    chat = UsageChat()
    docs = scripted.documents()
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: [d.model_copy(deep=True) for d in docs]),
        llm=chat,
        judge=rec.judge,
        clearance=FAST,
    )
    events: list[dict[str, Any]] = []
    if asynchronous:
        out: list[Any] = []
        async for event in retriever.astream_events(scripted.QUESTION, version="v2"):
            if event["event"] == "on_custom_event":
                events.append(event)
            if event["event"] == "on_retriever_end":
                out = event["data"]["output"]
    else:
        out = retriever.invoke(scripted.QUESTION)
    assert [d.id for d in out] == ["g1", "b1", "b2", "b3"]
    calls = out[0].metadata["meclear"]["model_calls"]
    _check(calls, chat.prompts, rec.judged)
    if asynchronous:
        end = [
            e["data"]
            for e in events
            if e["data"].get("stage") == "clearance" and e["data"].get("phase") == "end"
        ]
        assert len(end) == 1
        cost = end[0]["cost"]
        assert (cost["agent_calls"], cost["judge_calls"]) == (calls["agent"], calls["judge"])
        assert cost["model_calls"] == calls["total"]
        assert cost["agent_tokens"]["input_tokens"] == TOKENS_IN * len(chat.prompts)


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_llama_index_model_calls_and_tokens(asynchronous: bool) -> None:
    rec = scripted.Recorder()
    llm = UsageLLM()
    pp = MeClearPostprocessor(llm=llm, judge=rec.judge, clearance=FAST)
    if asynchronous:
        result = await pp.aclear_nodes(scripted.nodes(), scripted.QUESTION)
    else:
        result = pp.clear_nodes(scripted.nodes(), scripted.QUESTION)
    assert [n.node.node_id for n in result.nodes] == ["g1", "b1", "b2", "b3"]
    calls = result.nodes[0].node.metadata["meclear"]["model_calls"]
    _check(calls, llm.prompts, rec.judged)
    cost = result.report.cost
    assert cost.model_calls == calls["total"] and cost.agent_calls == calls["agent"]


def test_a_nondeterministic_agent_is_asked_per_trial() -> None:
    rec = scripted.Recorder()
    chat = UsageChat(temperature=0.7)
    docs = scripted.documents()
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: [d.model_copy(deep=True) for d in docs]),
        llm=chat,
        judge=rec.judge,
        clearance=FAST,
    )
    out = retriever.invoke(scripted.QUESTION)
    assert len(chat.prompts) > len(set(chat.prompts))  # the same prompt again in a new trial
    assert out[0].metadata["meclear"]["model_calls"]["agent"] == len(chat.prompts)


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_an_unreadable_verdict_retries_the_judge_only(asynchronous: bool) -> None:
    """The judge's first reply is unreadable; the engine retries the evaluation, and the
    agent's answer is reused instead of asked again."""
    agent_calls: list[tuple[str, ...]] = []

    def answer(coalition):  # type: ignore[no-untyped-def]
        agent_calls.append(tuple(m.id for m in coalition))
        return "Berlin" if "g1" in agent_calls[-1] else "I don't know"

    async def aanswer(coalition):  # type: ignore[no-untyped-def]
        return answer(coalition)

    # the first reply and the one-word rescue are both unreadable (judges.protocol)
    model = ScriptedTextModel("hmm, hard to say", "not sure", "VERDICT {nonce}: CORRECT")
    evaluate = task_evaluator(
        aanswer if asynchronous else answer,
        ReferenceFreeLLMJudge(model),
        question=scripted.QUESTION,
        context=scripted.memories(),
    )
    engine = MeClearEngine(FAST)
    if asynchronous:
        report = await engine.aclear(scripted.memories(), evaluate)
    else:
        report = engine.clear(scripted.memories(), evaluate)
    assert report.status == "complete" and report.cost.retries >= 1
    assert len(agent_calls) == evaluate.calls.agent_calls
    # one agent call per evaluation: the retry did not ask the agent again
    assert len(agent_calls) == report.cost.evaluator_calls
    # the unreadable reply, its one-word rescue, and the retry of the one distinct answer
    assert len(model.prompts) == 3
