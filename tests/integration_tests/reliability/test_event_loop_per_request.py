"""``asyncio.run()`` per request (Celery tasks, Flask views, scripts) gives the same
answers as one event loop: the clients the integrations call are never reused on another
loop (``loop_clients``). Against an OpenAI-compatible stub on 127.0.0.1 that keeps
connections alive, as providers do: 8 of 16 LangChain and 8 of 16 LlamaIndex queries
failed open before (the pooled connections of the closed loop)."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from langchain_openai import ChatOpenAI
from llama_index.core.schema import NodeWithScore
from llama_index.llms.openai import OpenAI

from meclear_integrations.langchain import ClearingRetriever, reference_config
from meclear_integrations.llama_index import MeClearPostprocessor
from meclear_integrations.simulation import redundant_harm_example
from tests.support.servers import OpenAIStub, serve
from tests.unit_tests.llama_index.conftest import case_nodes

KEPT = ["g1", "b1", "b2", "b3"]
REQUESTS = 4
"""Requests, one loop each: every other one failed open before the fix (2 of these 4)."""


@pytest.mark.slow
def test_langchain_asyncio_run_per_request() -> None:
    case = redundant_harm_example()
    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    stub = OpenAIStub.for_case(case)
    with serve(stub, keep_alive=True) as url:
        llm = ChatOpenAI(base_url=f"{url}/v1", api_key="stub-key", model="stub")
        retriever = ClearingRetriever(
            retriever=RunnableLambda(lambda q: [d.model_copy() for d in docs]), llm=llm
        )
        config = reference_config(case.reference)
        answers = [
            [d.id for d in asyncio.run(retriever.ainvoke(case.query, config=config))]
            for _ in range(REQUESTS)
        ]

        # and on one loop, the same answers
        async def one_loop() -> list[list[str]]:
            return [
                [d.id for d in await retriever.ainvoke(case.query, config=config)] for _ in range(2)
            ]

        same_loop = asyncio.run(one_loop())
    assert answers == [KEPT] * REQUESTS
    assert same_loop == [KEPT] * 2
    assert set(stub.statuses) == {200}


@pytest.mark.slow
def test_llama_index_asyncio_run_per_request() -> None:
    case = redundant_harm_example()
    stub = OpenAIStub.for_case(case)
    with serve(stub, keep_alive=True) as url:
        llm = OpenAI(model="gpt-4o-mini", api_base=f"{url}/v1", api_key="stub-key")
        pp = MeClearPostprocessor(llm=llm, reference=case.reference)

        def request() -> list[str]:
            nodes = [NodeWithScore(node=n, score=1.0) for n in case_nodes(case)]
            out = asyncio.run(pp.apostprocess_nodes(nodes, query_str=case.query))
            return [n.node.node_id for n in out]

        answers = [request() for _ in range(REQUESTS)]
        synced = pp.postprocess_nodes(
            [NodeWithScore(node=n, score=1.0) for n in case_nodes(case)], query_str=case.query
        )
    assert answers == [KEPT] * REQUESTS
    assert [n.node.node_id for n in synced] == KEPT  # the sync path is untouched
    assert set(stub.statuses) == {200}
