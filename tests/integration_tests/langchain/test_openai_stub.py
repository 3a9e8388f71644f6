"""langchain_openai.ChatOpenAI as agent and judge against a stub server on 127.0.0.1."""

from __future__ import annotations

import openai
import pytest
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from langchain_openai import ChatOpenAI

from meclear_integrations.langchain import (
    ClearingRetriever,
    LangChainReferenceJudge,
    reference_config,
)
from meclear_integrations.langchain.clearing_step import EVALUATE_RUN_NAME
from meclear_integrations.telemetry import TraceSettings
from tests.support.servers import OpenAIStub, candidate, serve

KEPT = ["g1", "b1", "b2", "b3"]


def _chat(url: str, **kwargs) -> ChatOpenAI:
    return ChatOpenAI(base_url=f"{url}/v1", api_key="stub-key", model="stub", **kwargs)


def _parsed_by(collector: RunCollectorCallbackHandler) -> set[str]:
    (root,) = collector.traced_runs
    clearance = next(c for c in root.child_runs if c.name == "meclear_clearance")
    return {c.outputs["parsed_by"] for c in clearance.child_runs if c.name == EVALUATE_RUN_NAME}


def test_chat_openai_agent_and_structured_judge(case, inner) -> None:
    stub = OpenAIStub.for_case(case)
    with serve(stub) as url:
        collector = RunCollectorCallbackHandler()
        retriever = ClearingRetriever(
            retriever=inner, llm=_chat(url), tracing=TraceSettings(detail="evaluations")
        )
        config = reference_config(case.reference, {"callbacks": [collector]})
        out = retriever.invoke(case.query, config=config)
    assert [d.id for d in out] == KEPT
    structured = stub.structured_requests()
    assert structured and structured[0]["response_format"]["type"] == "json_schema"
    judged = [candidate(_prompt(r)) for r in structured]
    assert len(judged) == len(set(judged))  # each distinct answer judged once
    assert len(structured) < len(stub.requests) // 2  # fewer judge calls than agent calls
    assert _parsed_by(collector) == {"structured"}


def test_plain_text_judge(case, inner) -> None:
    stub = OpenAIStub.for_case(case)
    with serve(stub) as url:
        judge = LangChainReferenceJudge(_chat(url), structured_output=False)
        retriever = ClearingRetriever(retriever=inner, llm=_chat(url), judge=judge)
        out = retriever.invoke(case.query, config=reference_config(case.reference))
    assert [d.id for d in out] == KEPT
    assert stub.structured_requests() == []


def test_429_is_retried_by_the_client(case, inner) -> None:
    stub = OpenAIStub.for_case(case, fail_first=2)
    with serve(stub) as url:
        retriever = ClearingRetriever(
            retriever=inner,
            llm=_chat(url, max_retries=2),
            clearance={"budget": {"max_concurrency": 1}},
        )
        out = retriever.invoke(case.query, config=reference_config(case.reference))
    assert [d.id for d in out] == KEPT
    assert stub.statuses[:3] == [429, 429, 200]


def test_429_without_client_retries_fails_explicitly(case, inner) -> None:
    stub = OpenAIStub.for_case(case, fail_first=1)
    with serve(stub) as url:
        retriever = ClearingRetriever(
            retriever=inner,
            llm=_chat(url, max_retries=0),
            clearance={"failure": {"retry": {"max_attempts": 1}}},
            on_failure="closed",
        )
        with pytest.raises(Exception, match="RateLimitError"):
            retriever.invoke(case.query, config=reference_config(case.reference))


def test_tenacity_retry_where_the_client_does_not(case, inner) -> None:
    stub = OpenAIStub.for_case(case, fail_first=2)
    with serve(stub) as url:
        llm = _chat(url, max_retries=0).with_retry(
            retry_if_exception_type=(openai.RateLimitError,),
            stop_after_attempt=3,
            wait_exponential_jitter=False,
        )
        retriever = ClearingRetriever(
            retriever=inner, llm=llm, clearance={"budget": {"max_concurrency": 1}}
        )
        out = retriever.invoke(case.query, config=reference_config(case.reference))
    assert [d.id for d in out] == KEPT
    assert stub.statuses[:3] == [429, 429, 200]


async def test_async_chat_openai(case, inner) -> None:
    stub = OpenAIStub.for_case(case, fail_first=1)
    with serve(stub) as url:
        retriever = ClearingRetriever(retriever=inner, llm=_chat(url, max_retries=2))
        out = await retriever.ainvoke(case.query, config=reference_config(case.reference))
    assert [d.id for d in out] == KEPT
    assert stub.statuses[0] == 429 and stub.structured_requests()


def _prompt(request: dict) -> str:
    return "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
