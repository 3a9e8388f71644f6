"""LlamaIndex on the real model: ``MeClearPostprocessor`` in a query engine, ``OpenAILike`` as
the task agent, the judge (against the reference) and the engine's synthesizer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from .memories import MEMORIES, QUESTION, REFERENCE, clearance

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(900)]


def _engine(llm: Any) -> Any:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    from meclear_integrations.llama_index import HashEmbedding, MeClearPostprocessor

    nodes = [TextNode(id_=i, text=t, metadata={"date": d}) for i, t, d in MEMORIES]
    index = VectorStoreIndex(nodes, embed_model=HashEmbedding())
    return index.as_query_engine(
        llm=llm,
        similarity_top_k=len(MEMORIES),
        node_postprocessors=[MeClearPostprocessor(llm=llm, clearance=clearance())],
    )


def _check(response: Any) -> None:
    assert str(response).strip()
    metas = [n.node.metadata["meclear"] for n in response.source_nodes]
    assert metas, "clearance returned no node"
    for meta in metas:
        assert meta.get("status") != "failed", f"clearance failed open: {meta.get('failure')}"
    if not metas[0]["early_exit"] and metas[0].get("status") != "unverified":
        assert all(m["shapley"] is not None for m in metas)
    for meta in metas:  # an abstention says why
        assert meta.get("status") != "unverified" or meta.get("status_reason"), meta


def test_postprocessor_in_a_query_engine(openai_like) -> None:
    from meclear_integrations.llama_index import query_reference

    engine = _engine(openai_like)
    with query_reference(REFERENCE):
        response = engine.query(QUESTION)
    _check(response)


def test_postprocessor_async(openai_like) -> None:
    from meclear_integrations.llama_index import query_reference

    engine = _engine(openai_like)

    async def ask() -> Any:
        with query_reference(REFERENCE):
            return await engine.aquery(QUESTION)

    _check(asyncio.run(ask()))
