"""llama_index.llms.openai.OpenAI as agent and judge against a stub server on 127.0.0.1.

The stub answers from the simulated world (SIMULATED, offline); the judge's verdict comes
back as a required tool call, which is how the package asks function-calling LLMs for
structured verdicts.
"""

from __future__ import annotations

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.llms.openai import OpenAI

from meclear_integrations.llama_index import HashEmbedding, MeClearPostprocessor, query_reference
from tests.support.servers import OpenAIStub, candidate, serve
from tests.unit_tests.llama_index.conftest import case_nodes

KEPT = ["g1", "b1", "b2", "b3"]


def _llm(url: str, **kwargs) -> OpenAI:
    return OpenAI(
        model="gpt-4o-mini", api_base=f"{url}/v1", api_key="stub-key", max_retries=0, **kwargs
    )


def test_openai_agent_and_tool_call_judge(case, nodes) -> None:
    stub = OpenAIStub.for_case(case)
    with serve(stub) as url:
        pp = MeClearPostprocessor(llm=_llm(url), reference=case.reference)
        out = pp.postprocess_nodes(nodes, query_str=case.query)
    assert [n.node.node_id for n in out] == KEPT
    tools = stub.tool_requests()
    judged = [candidate(_prompt(r)) for r in tools]
    assert tools and len(judged) == len(set(judged))  # each distinct answer judged once
    assert len(tools) < len(stub.requests) // 2  # fewer judge calls than agent calls
    assert tools[0]["tools"][0]["function"]["name"] == "respond"
    report = out[0].node.metadata["meclear"]
    assert report["recovered"] is True and report["cleared"] is False


async def test_openai_inside_a_query_engine_async(case) -> None:
    stub = OpenAIStub.for_case(case)
    with serve(stub) as url:
        llm = _llm(url)
        index = VectorStoreIndex(case_nodes(case), embed_model=HashEmbedding())
        pp = MeClearPostprocessor(llm=llm)
        engine = index.as_query_engine(llm=llm, similarity_top_k=6, node_postprocessors=[pp])
        with query_reference(case.reference):
            response = await engine.aquery(case.query)
    assert sorted(n.node.node_id for n in response.source_nodes) == sorted(KEPT)
    assert stub.tool_requests()


def test_throttled_openai_calls_are_retried(case, nodes) -> None:
    stub = OpenAIStub.for_case(case, fail_first=2)
    with serve(stub) as url:
        pp = MeClearPostprocessor(llm=_llm(url), reference=case.reference)
        out = pp.postprocess_nodes(nodes, query_str=case.query)
    assert stub.statuses[:2] == [429, 429] and 200 in stub.statuses
    assert [n.node.node_id for n in out] == KEPT


@pytest.mark.parametrize("on_failure", ["open", "closed"])
def test_a_dead_provider_fails_open_or_closed(case, nodes, on_failure: str) -> None:
    def always_500(method: str, path: str, body: bytes):
        return 500, {}, b'{"error": {"message": "boom", "type": "server_error"}}'

    with serve(always_500) as url:
        pp = MeClearPostprocessor(llm=_llm(url), reference=case.reference, on_failure=on_failure)
        if on_failure == "closed":
            with pytest.raises(Exception):  # noqa: B017 - the provider's error, typed by it
                pp.postprocess_nodes(nodes, query_str=case.query)
            return
        out = pp.postprocess_nodes(nodes, query_str=case.query)
    assert [n.node.node_id for n in out] == [n.node.node_id for n in nodes]
    assert out[0].node.metadata["meclear"]["status"] == "failed"


def test_the_cookbook_real_provider_path_against_the_stub(case, monkeypatch) -> None:
    """``cookbook/llama_index_query_engine.py`` with OPENAI_API_KEY and OPENAI_BASE_URL set
    builds ``llama_index.llms.openai.OpenAI``; pointed at the stub it flips the answer."""
    import runpy
    from pathlib import Path

    script = Path(__file__).resolve().parents[3] / "cookbook" / "llama_index_query_engine.py"
    stub = OpenAIStub.for_case(case)
    with serve(stub) as url:
        monkeypatch.setenv("OPENAI_API_KEY", "stub-key")
        monkeypatch.setenv("OPENAI_BASE_URL", f"{url}/v1")
        result = runpy.run_path(str(script))["main"]()
    assert result == {"plain": "January 2023", "cleared": "December 2023", "async": "December 2023"}
    assert stub.tool_requests() and {r["model"] for r in stub.requests} == {"gpt-4o-mini"}


def _prompt(request: dict) -> str:
    return "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
