"""Sync models under async paths run on daemon workers, on the real clock: a slow sync model
never blocks the event loop and the wall deadline holds (a provider that never returns and
the interpreter's exit: ``test_interpreter_exit.py``)."""

from __future__ import annotations

import pytest
from llama_index.core.schema import NodeWithScore, TextNode

from meclear_integrations import ClearanceConfig
from meclear_integrations.judges import ExactMatchJudge
from meclear_integrations.llama_index import MeClearPostprocessor
from tests.support.slow_models import SyncOnlyLLM
from tests.support.timing import idle_loop, ticking


def _nodes() -> list[NodeWithScore]:
    texts = ["John was in Italy in December 2023.", "John likes pasta.", "Rome is in Italy."]
    return [NodeWithScore(node=TextNode(id_=f"n{i}", text=t)) for i, t in enumerate(texts)]


@pytest.mark.slow
async def test_a_slow_sync_llama_index_llm_does_not_block_the_loop_or_the_deadline() -> None:
    postprocessor = MeClearPostprocessor(
        llm=SyncOnlyLLM(seconds=2.0),
        judge=ExactMatchJudge(),
        reference="December 2023",
        clearance=ClearanceConfig(budget={"max_wall_seconds": 0.5}, estimator="exact"),
    )
    lateness, idle_gap = await idle_loop(0.5)  # the loop's noise on this machine now
    clearance, elapsed, gap = await ticking(
        postprocessor.aclear_nodes(_nodes(), "When was John in Italy?")
    )
    # today: two blocking 2 s calls on the loop, then the deadline (>= 4 s, gaps >= 2 s)
    assert elapsed < 1.5 + 2 * (lateness + idle_gap)
    assert clearance.report is not None and clearance.report.failure.reason == "time_budget"
    assert [n.node.node_id for n in clearance.nodes] == ["n0", "n1", "n2"]
    assert gap < 0.5 + 2 * idle_gap
