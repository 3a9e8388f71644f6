"""The live components (LangChain ClearingRetriever, LlamaIndex MeClearPostprocessor)
over simulated models whose calls are gauged, and concurrent queries through them."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableLambda
from pydantic import Field

from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from meclear_integrations.llama_index import MeClearPostprocessor, SimulatedLLM
from meclear_integrations.simulation import redundant_harm_example
from tests.support.limits import Gauge

QUERIES = 6
LATENCY = 0.002  # long enough for calls to overlap; the bound is what is tested
FAST = {"failure": {"retry": {"initial_backoff": 0.0, "jitter": 0.0}}}


class GaugedChat(SimulatedChatModel):
    """The simulated chat model, each call taking ``latency`` and counted by ``gauge``."""

    gauge: Any = None
    latency: float = LATENCY

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        with self.gauge.inside():
            time.sleep(self.latency)
            return super()._generate(messages, stop, run_manager, **kwargs)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        with self.gauge.inside():
            await asyncio.sleep(self.latency)
            return await super()._agenerate(messages, stop, run_manager, **kwargs)


class GaugedLLM(SimulatedLLM):
    """The simulated LlamaIndex LLM, each call counted by ``gauge`` (``latency`` set)."""

    gauge: Any = Field(default=None, exclude=True)

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        with self.gauge.inside():
            return super().complete(prompt, formatted, **kwargs)

    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        with self.gauge.inside():
            return await super().acomplete(prompt, formatted, **kwargs)


def gauged_langchain(gauge: Gauge, **kwargs: Any) -> Callable[[bool], Any]:
    from langchain_core.documents import Document

    case = redundant_harm_example()
    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: [d.model_copy() for d in docs]),
        llm=GaugedChat.from_case(case, gauge=gauge),
        clearance={**FAST, **kwargs.pop("clearance", {})},
        **kwargs,
    )
    config = reference_config(case.reference)

    async def run(asynchronous: bool) -> list[Any]:
        if asynchronous:
            return await retriever.ainvoke(case.query, config=config)
        return retriever.invoke(case.query, config=config)

    return run


def gauged_llama_index(gauge: Gauge, **kwargs: Any) -> Callable[[bool], Any]:
    from llama_index.core.schema import NodeWithScore, TextNode

    case = redundant_harm_example()
    nodes = [NodeWithScore(node=TextNode(id_=m.id, text=m.content)) for m in case.memories]
    pp = MeClearPostprocessor(
        llm=GaugedLLM.from_case(case, gauge=gauge, latency=LATENCY),
        reference=case.reference,
        clearance={**FAST, **kwargs.pop("clearance", {})},
        **kwargs,
    )

    async def run(asynchronous: bool) -> list[Any]:
        if asynchronous:
            return await pp.apostprocess_nodes(nodes, query_str=case.query)
        return pp.postprocess_nodes(nodes, query_str=case.query)

    return run


COMPONENTS = {"langchain": gauged_langchain, "llama_index": gauged_llama_index}


def clearance_meta(item: Any) -> dict[str, Any]:
    holder = item.metadata if hasattr(item, "metadata") else item.node.metadata
    return holder["meclear"]


def cleared_stale(out: list[Any]) -> bool:
    """The query cleared the two stale memories (f1, f2) and kept the rest."""
    ids = [getattr(i, "id", None) or i.node.node_id for i in out]
    return ids == ["g1", "b1", "b2", "b3"] and "failure" not in clearance_meta(out[0])


def concurrent_queries(
    run: Callable[[bool], Any], asynchronous: bool, queries: int = QUERIES
) -> list[list[Any]]:
    """``queries`` queries at once: ``gather`` on one loop, or one thread each."""
    if asynchronous:

        async def all_queries() -> list[list[Any]]:
            return list(await asyncio.gather(*(run(True) for _ in range(queries))))

        return asyncio.run(all_queries())
    results: list[Any] = [None] * queries

    def one(i: int) -> None:
        results[i] = asyncio.run(run(False))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(queries)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results
