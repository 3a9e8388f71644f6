"""``clear_nodes`` / ``aclear_nodes`` accept the query as ``query=`` or, as LlamaIndex's
``postprocess_nodes`` spells it, ``query_str=``."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.schema import NodeWithScore, TextNode

from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.llama_index import MeClearPostprocessor, SimulatedLLM
from meclear_integrations.simulation import redundant_harm_example


def _setup():
    case = redundant_harm_example()
    nodes = [NodeWithScore(node=TextNode(id_=m.id, text=m.content)) for m in case.memories]
    post = MeClearPostprocessor(llm=SimulatedLLM.from_case(case), reference=case.reference)
    return case, nodes, post


def test_both_spellings_clear_alike() -> None:
    case, nodes, post = _setup()
    by_query = post.clear_nodes(nodes, query=case.query).report.cleared_ids
    by_query_str = post.clear_nodes(nodes, query_str=case.query).report.cleared_ids
    positional = post.clear_nodes(nodes, case.query).report.cleared_ids
    kept = post.postprocess_nodes(nodes, query_str=case.query)
    assert by_query == by_query_str == positional == ["f1", "f2"]
    assert sorted(n.node.node_id for n in kept) == ["b1", "b2", "b3", "g1"]
    result = asyncio.run(post.aclear_nodes(nodes, query_str=case.query))
    assert result.report.cleared_ids == ["f1", "f2"]


def test_one_query_exactly() -> None:
    case, nodes, post = _setup()
    with pytest.raises(ConfigurationError, match=r"query=\.\.\. or query_str="):
        post.clear_nodes(nodes)
    with pytest.raises(ConfigurationError, match=r"query=\.\.\. or query_str="):
        post.clear_nodes(nodes, case.query, query_str=case.query)
