"""The live components (LangChain and LlamaIndex) over a scripted provider that times out
while it is down, with a circuit breaker and the clearance events collected."""

from __future__ import annotations

import threading
import time
from typing import Any

from meclear_integrations.runtime.breaker import CircuitBreaker


# ---------------------------------------------------------------- components
class Provider:
    """A scripted provider: fails with a timeout while ``down``; counts calls."""

    def __init__(self, case: Any) -> None:
        self.down = True
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, prompt: Any) -> str:
        with self._lock:
            self.calls += 1
        if self.down:
            raise TimeoutError("the provider timed out")
        return "yes"

    def settled(self, quiet: float = 0.2, limit: float = 5.0) -> int:
        """The call count once no call has arrived for ``quiet`` seconds.

        A failed query abandons the sync calls still running in worker threads (the
        async path awaits a sync-only model off the loop); they finish after the query
        returned, so a count taken at once can miss them.
        """
        deadline = time.monotonic() + limit
        seen = self.calls
        while time.monotonic() < deadline:
            time.sleep(quiet)
            if self.calls == seen:
                break
            seen = self.calls
        return seen


def outage_langchain(case: Any, provider: Provider, breaker: CircuitBreaker, **kwargs: Any):
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda

    from meclear_integrations.langchain import ClearingRetriever

    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    component = ClearingRetriever(
        retriever=RunnableLambda(lambda q: list(docs)),
        agent=RunnableLambda(provider),
        judge=lambda question, answer, **kw: 1.0,
        limits={"circuit_breaker": breaker},
        clearance={"failure": {"retry": {"max_attempts": 1}}},
        **kwargs,
    )

    from langchain_core.callbacks import BaseCallbackHandler

    events: list[dict[str, Any]] = []

    class Events(BaseCallbackHandler):
        def on_custom_event(self, name: str, data: Any, **kw: Any) -> None:
            events.append(data)

    config = {"callbacks": [Events()]}

    async def run(asynchronous: bool) -> list[Any]:
        if asynchronous:
            return await component.ainvoke(case.query, config=config)
        return component.invoke(case.query, config=config)

    run.events = events  # type: ignore[attr-defined]
    return run, lambda d: d.metadata["meclear"]


def outage_llama_index(case: Any, provider: Provider, breaker: CircuitBreaker, **kwargs: Any):
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.schema import NodeWithScore, TextNode

    from meclear_integrations.llama_index import MeClearPostprocessor

    class Scripted(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata()

        def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
            return CompletionResponse(text=provider(prompt))

        def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any):
            raise NotImplementedError

    nodes = [
        NodeWithScore(node=TextNode(id_=m.id, text=m.content), score=1.0) for m in case.memories
    ]
    component = MeClearPostprocessor(
        llm=Scripted(),
        judge=lambda question, answer, **kw: 1.0,
        limits={"circuit_breaker": breaker},
        clearance={"failure": {"retry": {"max_attempts": 1}}},
        **kwargs,
    )

    from llama_index.core.instrumentation import get_dispatcher

    from tests.unit_tests.llama_index.conftest import EventCollector

    collector = EventCollector()

    async def run(asynchronous: bool) -> list[Any]:
        root = get_dispatcher()
        root.add_event_handler(collector)
        try:
            if asynchronous:
                return await component.apostprocess_nodes(nodes, query_str=case.query)
            return component.postprocess_nodes(nodes, query_str=case.query)
        finally:
            root.event_handlers.remove(collector)

    run.events = collector.events  # type: ignore[attr-defined]
    return run, lambda n: n.node.metadata["meclear"]


BUILDERS = {"langchain": outage_langchain, "llama_index": outage_llama_index}
