"""ConMem on a llama.cpp-style server (json_schema -> HTTP 500): the structured calls fall
back to JSON mode once per endpoint, never retried as transient, so no decision fails on
the output format (before, every stage failed with the server's HTTP 500)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from langchain_openai import ChatOpenAI

from meclear_integrations.judges.model import ENDPOINT_FORMATS
from meclear_integrations.langchain.admission import admitter_from_langchain
from tests.support.llama_cpp_stub import LlamaCppStub
from tests.support.servers import serve

CONTEXT = [{"role": "user", "content": "I'm allergic to shellfish, never suggest shrimp."}]


@pytest.fixture(autouse=True)
def _fresh_endpoints() -> Iterator[None]:
    ENDPOINT_FORMATS.clear()
    yield
    ENDPOINT_FORMATS.clear()


def _failures_text(decision) -> str:
    error = decision.error
    if error is None:
        return ""
    return " ".join([error.message, *(f.error for f in error.failures)])


def _check(stub: LlamaCppStub, decision) -> None:
    kinds = stub.kinds()
    assert kinds.count("json_schema") == 1  # rejected once, remembered for the endpoint
    assert kinds.count("json_object") >= 1  # every later structured call in JSON mode
    text = _failures_text(decision)
    assert "response_format" not in text and "json_schema" not in text, text


def test_sync_admission_negotiates_json_mode() -> None:
    stub = LlamaCppStub()
    with serve(stub) as url:
        llm = ChatOpenAI(base_url=f"{url}/v1", api_key="x", model="smollm2", max_retries=0)
        admitter = admitter_from_langchain(llm)
        decision = admitter.decide("User is allergic to shellfish.", CONTEXT)
    _check(stub, decision)


def test_async_admission_negotiates_json_mode() -> None:
    stub = LlamaCppStub()
    with serve(stub) as url:
        llm = ChatOpenAI(base_url=f"{url}/v1", api_key="x", model="smollm2", max_retries=0)
        admitter = admitter_from_langchain(llm)
        decision = asyncio.run(admitter.adecide("User is allergic to shellfish.", CONTEXT))
    _check(stub, decision)
