"""Per event loop copies of the models the integrations call (``loop_clients``): one per
running loop and model, with an async HTTP client of their own; sync calls and clients the
user passed are left as they are."""

from __future__ import annotations

import asyncio

import httpx
from langchain_openai import ChatOpenAI
from llama_index.llms.openai import OpenAI

from meclear_integrations.runtime.loop_clients import PerLoopModels, for_event_loop


def _http(model: ChatOpenAI) -> object:
    return model.root_async_client._client


def test_langchain_copy_per_loop() -> None:
    llm = ChatOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", model="stub")
    models = PerLoopModels()

    async def twice() -> tuple[ChatOpenAI, ChatOpenAI]:
        return models(llm), models(llm)

    a1, a2 = asyncio.run(twice())
    b1, _ = asyncio.run(twice())
    assert a1 is a2  # one copy per loop and model
    assert a1 is not b1 and _http(a1) is not _http(b1)
    assert _http(a1) is not _http(llm)  # the process-wide client of langchain_openai
    assert a1.async_client is a1.root_async_client.chat.completions
    assert a1.max_retries == 0 and a1.root_async_client.max_retries == 0  # still retry-free
    assert llm.max_retries != 0 and _http(llm) is _http(
        ChatOpenAI(  # yours: untouched
            base_url="http://127.0.0.1:9/v1", api_key="k", model="stub"
        )
    )
    sync = models(llm)
    assert sync is models(llm) and sync.root_async_client._client is _http(llm)


def test_a_client_you_passed_is_kept() -> None:
    mine = httpx.AsyncClient()
    llm = ChatOpenAI(
        base_url="http://127.0.0.1:9/v1", api_key="k", model="stub", http_async_client=mine
    )
    assert for_event_loop(llm) is llm
    li = OpenAI(model="gpt-4o-mini", api_key="k", async_http_client=mine)
    assert for_event_loop(li) is li


def test_llama_index_copy_builds_its_client_in_the_loop() -> None:
    llm = OpenAI(model="gpt-4o-mini", api_base="http://127.0.0.1:9/v1", api_key="k")
    models = PerLoopModels()

    async def clients() -> object:
        return models(llm)._get_aclient()

    first, second = asyncio.run(clients()), asyncio.run(clients())
    assert first is not second and first._client is not second._client
