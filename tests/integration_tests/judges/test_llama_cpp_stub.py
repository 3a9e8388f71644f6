"""The README swaps against a stub of llama.cpp's server (json_schema -> HTTP 500).

Before format negotiation every query failed open here: the judge's json_schema request got
HTTP 500, was retried as transient, and the context came back unchanged (LangChain), or
the reply to a tool call that the server ignores was not one JSON object (LlamaIndex).
Now the first judgement of an endpoint pays one rejected request, every later one asks in
JSON mode, and clearance runs end to end. The stub's agent answers from the memories it
is shown (the stale city wins when present), so clearing the stale memory recovers.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from langchain_openai import ChatOpenAI
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.llms.openai_like import OpenAILike

from meclear_integrations import ClearanceConfig
from meclear_integrations.judges.model import ENDPOINT_FORMATS
from meclear_integrations.langchain import ClearingRetriever, reference_config
from meclear_integrations.llama_index import MeClearPostprocessor, query_reference
from tests.support.llama_cpp_stub import LlamaCppStub
from tests.support.servers import serve

MEMORIES = [
    ("m1", "Ana lives in Lisbon."),
    ("m2", "Ana likes hiking."),
    ("m3", "Update: Ana moved to Berlin in June 2024."),
]
FAST = ClearanceConfig(
    budget={"max_concurrency": 1},
    failure={"retry": {"initial_backoff": 0.0, "jitter": 0.0, "max_attempts": 3}},
)


def stale_agent(prompt: str) -> str:
    """A small model's answer: the first city it reads in its memories."""
    for city in ("Lisbon", "Berlin"):
        if city in prompt:
            return city
    return "I don't know."


@pytest.fixture(autouse=True)
def _fresh_endpoints() -> Iterator[None]:
    ENDPOINT_FORMATS.clear()
    yield
    ENDPOINT_FORMATS.clear()


def _documents() -> list[Document]:
    return [Document(page_content=t, id=i, metadata={"id": i}) for i, t in MEMORIES]


def _chat(url: str) -> ChatOpenAI:
    return ChatOpenAI(base_url=f"{url}/v1", api_key="x", model="smollm2", max_retries=2)


def _retriever(llm: ChatOpenAI) -> ClearingRetriever:
    docs = RunnableLambda(lambda _q: _documents())
    return ClearingRetriever(retriever=docs, llm=llm, clearance=FAST)


def test_langchain_swap_clears_the_stale_memory_without_failing_open() -> None:
    stub = LlamaCppStub(answer=stale_agent)
    with serve(stub) as url, warnings.catch_warnings():
        warnings.simplefilter("error")  # a FailOpenWarning fails the test
        kept = _retriever(_chat(url)).invoke(
            "Where does Ana live?", config=reference_config("Berlin")
        )
    assert [d.id for d in kept] == ["m2", "m3"]
    kinds = stub.kinds()
    assert kinds.count("json_schema") == 1  # rejected once, never retried, remembered
    assert kinds.count("json_object") >= 2 and "tools" not in kinds
    report = kept[0].metadata["meclear"]
    assert report["status"] == "complete" and report["cleared"] is False
    assert report["model_calls"]["tokens"]["judge"]["calls_reported"] >= 2  # llama.cpp usage


def test_langchain_swap_on_a_text_only_server_reads_one_word_verdicts() -> None:
    stub = LlamaCppStub(answer=stale_agent, mode="text_only")
    with serve(stub) as url, warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = _retriever(_chat(url)).invoke(
            "Where does Ana live?", config=reference_config("Berlin")
        )
    assert [d.id for d in kept] == ["m2", "m3"]
    assert stub.kinds().count("json_schema") == 1 and stub.kinds().count("json_object") == 1


def test_a_server_that_dies_mid_run_fails_open_and_says_why() -> None:
    stub = LlamaCppStub(answer=stale_agent, mode="dead_after", dead_after=4)
    with serve(stub) as url, pytest.warns(Warning, match="kind 'transient'"):
        kept = _retriever(_chat(url)).invoke(
            "Where does Ana live?", config=reference_config("Berlin")
        )
    assert [d.id for d in kept] == ["m1", "m2", "m3"]  # nothing lost
    failure = kept[0].metadata["meclear"]["failure"]
    assert failure["kind"] == "transient" and failure["failed_count"] >= 1


def test_replies_cut_at_max_tokens_are_no_verdict_counted_not_a_crash() -> None:
    stub = LlamaCppStub(answer=stale_agent, mode="text_only", finish_length=True)
    with serve(stub) as url, pytest.warns(Warning, match="kind 'unreadable'"):
        kept = _retriever(_chat(url)).invoke(
            "Where does Ana live?", config=reference_config("Berlin")
        )
    assert [d.id for d in kept] == ["m1", "m2", "m3"]
    failure = kept[0].metadata["meclear"]["failure"]
    assert failure["kind"] == "unreadable" and "finish_reason=length" in failure["error"]


def _nodes() -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(id_=i, text=t), score=1.0) for i, t in MEMORIES]


@pytest.mark.parametrize("chat", [True, False])
def test_llama_index_swap_with_openai_like(chat: bool) -> None:
    stub = LlamaCppStub(answer=stale_agent)
    with serve(stub) as url, warnings.catch_warnings():
        warnings.simplefilter("error")
        llm = OpenAILike(
            api_base=f"{url}/v1", api_key="x", model="smollm2", is_chat_model=chat, max_retries=0
        )
        with query_reference("Berlin"):
            kept = MeClearPostprocessor(llm=llm, clearance=FAST).postprocess_nodes(
                _nodes(), query_str="Where does Ana live?"
            )
    assert [n.node.node_id for n in kept] == ["m2", "m3"]
    kinds = stub.kinds()
    if chat:  # json_schema rejected once, then JSON mode
        assert kinds.count("json_schema") == 1 and kinds.count("json_object") >= 2
    else:  # the completions API takes no response_format: text and one-word verdicts
        assert set(kinds) == {"text"}


async def test_llama_index_async_swap() -> None:
    stub = LlamaCppStub(answer=stale_agent)
    with serve(stub) as url:
        llm = OpenAILike(api_base=f"{url}/v1", api_key="x", model="smollm2", is_chat_model=True)
        with query_reference("Berlin"):
            kept = await MeClearPostprocessor(llm=llm, clearance=FAST).apostprocess_nodes(
                _nodes(), query_str="Where does Ana live?"
            )
    assert [n.node.node_id for n in kept] == ["m2", "m3"]
    assert stub.kinds().count("json_schema") == 1


def test_llama_index_replies_cut_at_max_tokens_say_so() -> None:
    stub = LlamaCppStub(answer=stale_agent, mode="text_only", finish_length=True)
    with serve(stub) as url, pytest.warns(Warning, match="kind 'unreadable'"):
        llm = OpenAILike(
            api_base=f"{url}/v1", api_key="x", model="smollm2", is_chat_model=True, max_retries=0
        )
        with query_reference("Berlin"):
            kept = MeClearPostprocessor(llm=llm, clearance=FAST).postprocess_nodes(
                _nodes(), query_str="Where does Ana live?"
            )
    assert [n.node.node_id for n in kept] == ["m1", "m2", "m3"]
    failure = kept[0].node.metadata["meclear"]["failure"]
    assert failure["kind"] == "unreadable" and "finish_reason=length" in failure["error"]
