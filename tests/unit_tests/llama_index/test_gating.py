"""MeClearPostprocessor with triggers and the harm ledger."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.schema import NodeWithScore, TextNode

from meclear_integrations.ledger import HarmLedger
from meclear_integrations.llama_index import MeClearPostprocessor, SimulatedLLM
from meclear_integrations.simulation import redundant_harm_example
from meclear_integrations.triggers import Sampling, WhenJudgeFails

CASE = redundant_harm_example()
NODES = [NodeWithScore(node=TextNode(text=m.content, id_=m.id), score=1.0) for m in CASE.memories]


class Counting(SimulatedLLM):
    calls: int = 0

    def complete(self, prompt, formatted=False, **kwargs):
        self.calls += 1
        return super().complete(prompt, formatted=formatted, **kwargs)

    async def acomplete(self, prompt, formatted=False, **kwargs):
        return self.complete(prompt, formatted=formatted, **kwargs)


def processor(**kwargs) -> tuple[MeClearPostprocessor, Counting]:
    llm = Counting.from_case(CASE)
    return MeClearPostprocessor(llm=llm, reference=CASE.reference, **kwargs), llm


@pytest.fixture
def ledger(tmp_path):
    with HarmLedger(tmp_path / "l.db") as led:
        yield led


def test_declined_query_costs_nothing(ledger) -> None:
    post, llm = processor(loop={"trigger": Sampling(0.0), "ledger": ledger})
    result = post.clear_nodes(NODES, CASE.query)
    assert llm.calls == 0 and result.report is not None
    assert result.report.status == "skipped"
    assert [n.node.get_content() for n in result.nodes] == [m.content for m in CASE.memories]
    meta = result.nodes[0].node.metadata["meclear"]
    assert meta["status"] == "skipped" and meta["trigger"]["reason"] == "not_sampled"
    assert "meclear" not in NODES[0].node.metadata  # inputs untouched
    run = ledger.find_run(ledger.query_id(CASE.query))
    assert run.mode == "skipped" and run.trace_system == "llama_index"


def test_repeat_is_ledger_guided(ledger) -> None:
    post, llm = processor(loop={"trigger": WhenJudgeFails(), "ledger": ledger})
    first = post.clear_nodes(NODES, CASE.query)
    cold = llm.calls
    second = post.clear_nodes(NODES, "Remind me: " + CASE.query)
    warm = llm.calls - cold
    assert [n.node.node_id for n in second.nodes] == ["g1", "b1", "b2", "b3"]
    assert second.report.clearance_search == "prior" and warm < cold / 3
    assert first.report.clearance_search != "prior"
    meta = second.nodes[0].node.metadata["meclear"]
    assert meta["ledger_guided"] is True and meta["ledger_run_id"] == ledger.runs()[0].run_id
    assert "meclear" in second.nodes[0].node.excluded_llm_metadata_keys
    assert ledger.runs()[0].success_signal == "reference"


def test_async(ledger) -> None:
    post, _ = processor(loop={"trigger": WhenJudgeFails(), "ledger": ledger})

    async def main():
        await post.aclear_nodes(NODES, CASE.query)
        return await post.aclear_nodes(NODES, "Remind me: " + CASE.query)

    second = asyncio.run(main())
    assert second.report.clearance_search == "prior"
    assert [r.mode for r in ledger.runs()] == ["ledger_guided", "full"]
