"""With the default ledger (texts kept), a feedback replays through the postprocessor from
its run alone: no ``query=``, no trace, no ``get_nodes``."""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore, TextNode

from meclear_integrations.ledger import HarmLedger
from meclear_integrations.llama_index import MeClearPostprocessor
from meclear_integrations.llama_index.feedback import replay_feedback as replay_nodes
from meclear_integrations.llama_index.simulated import SimulatedLLM
from meclear_integrations.simulation import redundant_harm_example

CASE = redundant_harm_example()
FAULTS = {"f1", "f2"}


def test_llama_index_replay_from_the_run_alone(tmp_path) -> None:
    nodes = [
        NodeWithScore(node=TextNode(id_=m.id, text=m.content), score=1.0) for m in CASE.memories
    ]
    with HarmLedger(tmp_path / "l.db") as ledger:
        pp = MeClearPostprocessor(llm=SimulatedLLM.from_case(CASE), loop={"ledger": ledger})
        pp.clear_nodes(nodes, CASE.query)
        run = ledger.find_run(ledger.query_id(CASE.query))
        # a reviewer's verdict: its replay settles the harm for the next asker (an end
        # user's would not: ledger/test_feedback_authority.py)
        feedback = ledger.feedback(
            run.run_id, correct=False, correction=CASE.reference, authority="reviewer"
        )
        result = replay_nodes(pp, ledger, feedback)
        assert set(result.report.cleared_ids) == FAULTS and result.report.recovered
        again = pp.clear_nodes(nodes, CASE.query)
        assert {n.node.node_id for n in again.nodes}.isdisjoint(FAULTS)
