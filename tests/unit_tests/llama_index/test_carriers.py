"""clearance_scope on the LlamaIndex MeClearPostprocessor: verified carriers withheld."""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore, TextNode

from meclear_integrations.llama_index import MeClearPostprocessor, SimulatedLLM
from meclear_integrations.simulation.examples import heavy_redundancy_example


def test_complete_withholds_every_copy() -> None:
    case = heavy_redundancy_example()
    nodes = [
        NodeWithScore(node=TextNode(id_=m.id, text=m.content), score=1.0 - i / 10)
        for i, m in enumerate(case.memories)
    ]
    llm = SimulatedLLM.from_case(case)
    complete = MeClearPostprocessor(llm=llm, reference=case.reference, clearance_scope="complete")
    out = complete.postprocess_nodes(nodes, query_str=case.query)
    assert [n.node.node_id for n in out] == ["g1", "b1", "b2"]
    minimal = MeClearPostprocessor(llm=llm, reference=case.reference)
    kept = minimal.postprocess_nodes(nodes, query_str=case.query)
    assert [n.node.node_id for n in kept] == ["g1", "b1", "b2", "f3", "f4"]
