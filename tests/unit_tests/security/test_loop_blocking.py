"""Sync models under async paths run on daemon workers: they never block the event loop, the
deadline holds, and a provider that never returns neither hangs ``asyncio.run`` nor the
interpreter's exit."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from llama_index.core.schema import NodeWithScore, TextNode

from meclear_integrations import ClearanceConfig
from meclear_integrations.judges import ExactMatchJudge
from meclear_integrations.llama_index import MeClearPostprocessor

from .slow_models import SyncOnlyLLM

ROOT = Path(__file__).resolve().parents[3]
_IMPORTS = "from tests.unit_tests.security.slow_models import SyncOnlyChat, SyncOnlyLLM\n"


def _nodes() -> list[NodeWithScore]:
    texts = ["John was in Italy in December 2023.", "John likes pasta.", "Rome is in Italy."]
    return [NodeWithScore(node=TextNode(id_=f"n{i}", text=t)) for i, t in enumerate(texts)]


async def test_a_slow_sync_llama_index_llm_does_not_block_the_loop_or_the_deadline() -> None:
    postprocessor = MeClearPostprocessor(
        llm=SyncOnlyLLM(seconds=2.0),
        judge=ExactMatchJudge(),
        reference="December 2023",
        clearance=ClearanceConfig(budget={"max_wall_seconds": 0.5}, estimator="exact"),
    )
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    beat = asyncio.create_task(ticker())
    started = time.monotonic()
    try:
        clearance = await postprocessor.aclear_nodes(_nodes(), "When was John in Italy?")
    finally:
        beat.cancel()
    elapsed = time.monotonic() - started
    assert elapsed < 1.5  # today: two blocking 2 s calls on the loop, then the deadline
    assert clearance.report is not None and clearance.report.failure.reason == "time_budget"
    assert [n.node.node_id for n in clearance.nodes] == ["n0", "n1", "n2"]
    assert max(b - a for a, b in itertools.pairwise(ticks)) < 0.5


def _exits(script: str) -> float:
    code = _IMPORTS + textwrap.dedent(script).strip()
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=40, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "failed" in out.stdout, out.stdout
    return time.monotonic() - started


def test_a_llama_index_provider_that_never_returns_does_not_hang_asyncio_run() -> None:
    seconds = _exits(
        """
        import asyncio
        from llama_index.core.schema import NodeWithScore, TextNode
        from meclear_integrations import ClearanceConfig
        from meclear_integrations.judges import ExactMatchJudge
        from meclear_integrations.llama_index import MeClearPostprocessor

        pp = MeClearPostprocessor(
            llm=SyncOnlyLLM(seconds=-1), judge=ExactMatchJudge(), reference="x",
            clearance=ClearanceConfig(budget={"max_wall_seconds": 0.5}),
        )
        nodes = [NodeWithScore(node=TextNode(id_=f"n{i}", text=f"t{i}")) for i in range(2)]
        out = asyncio.run(pp.aclear_nodes(nodes, "q"))
        print(out.report.status)
        """
    )
    assert seconds < 20  # today it never returns (the loop is blocked by complete())


def test_a_sync_only_langchain_model_that_never_returns_does_not_hang_asyncio_run() -> None:
    seconds = _exits(
        """
        import asyncio
        from langchain_core.documents import Document
        from langchain_core.runnables import RunnableLambda
        from meclear_integrations import ClearanceConfig
        from meclear_integrations.judges import ExactMatchJudge
        from meclear_integrations.langchain import ClearingRetriever, reference_config

        docs = [Document(page_content=f"t{i}", id=f"d{i}") for i in range(2)]
        retriever = ClearingRetriever(
            retriever=RunnableLambda(lambda q: docs), llm=SyncOnlyChat(),
            judge=ExactMatchJudge(), clearance=ClearanceConfig(budget={"max_wall_seconds": 0.5}),
        )
        out = asyncio.run(retriever.ainvoke("q", config=reference_config("x")))
        print(out[0].metadata["meclear"]["status"])
        """
    )
    assert seconds < 20  # today asyncio.run joins the executor thread for 60 s
