"""A provider that never returns neither hangs ``asyncio.run`` nor the interpreter's exit
(fresh interpreters: subprocesses, so the integration tier). The hung call blocks 60 s and
then prints a marker: a process that waited for it prints the marker, one that exits at once
never does (behaviour, not wall time: the machine is shared)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.slow_models import RETURNED

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
_IMPORTS = "from tests.support.slow_models import SyncOnlyChat, SyncOnlyLLM\n"


def _exits(script: str) -> str:
    """The script's output in a fresh interpreter (it ran to its end and exited)."""
    code = _IMPORTS + textwrap.dedent(script).strip()
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "failed" in out.stdout, out.stdout
    return out.stdout


def test_a_llama_index_provider_that_never_returns_does_not_hang_asyncio_run() -> None:
    stdout = _exits(
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
    assert RETURNED not in stdout  # today complete() blocks the loop until the call returns


def test_a_sync_only_langchain_model_that_never_returns_does_not_hang_asyncio_run() -> None:
    stdout = _exits(
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
    assert RETURNED not in stdout  # today asyncio.run joins the executor thread until then
