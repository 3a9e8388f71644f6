"""OpenAI-compatible stubs on 127.0.0.1 that fail the way live providers do, and the two
components (LangChain ``ClearingRetriever``, LlamaIndex ``MeClearPostprocessor``) wired to
them with the real provider clients (``ChatOpenAI``, LlamaIndex ``OpenAI``)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support.servers import OpenAIStub

MODES = ("ok", "dead", "401", "404", "garbage", "broken", "slow")
"""ok: answers from the simulated world; dead: HTTP 500 on every request; 401 / 404: the
provider's error for a bad key / an unknown model or URL; garbage: HTTP 200 with an HTML
page (what a wrong base_url usually returns); broken: HTTP 200 declared JSON whose body is
not JSON (a truncated reply); slow: answers after ``delay`` seconds."""


@dataclass
class FaultStub:
    """Serves ``mode`` (see :data:`MODES`); counts the requests it received."""

    mode: str
    ok: OpenAIStub | None = None
    delay: float = 0.3
    requests: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.requests += 1
        if self.mode == "dead":
            return 500, {}, _error("the server had an error", "server_error")
        if self.mode == "401":
            return 401, {}, _error("Incorrect API key provided: sk-te****", "invalid_api_key")
        if self.mode == "404":
            return 404, {}, _error("The model `nope` does not exist", "model_not_found")
        if self.mode == "garbage":
            return 200, {"content-type": "text/html"}, b"<html>Welcome to nginx!</html>"
        if self.mode == "broken":
            return 200, {}, b'{"id": "chatcmpl-1", "choices": [{"mess'
        if self.mode == "slow":
            time.sleep(self.delay)
        assert self.ok is not None
        return self.ok(method, path, body)


class HangingStub:
    """Accepts every request and answers none until :meth:`release` (then HTTP 500): a
    provider that hangs. Counts the requests it received."""

    def __init__(self) -> None:
        self.requests = 0
        self._released = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.requests += 1
        self._released.wait(timeout=600)
        return 500, {}, _error("released", "server_error")

    def release(self) -> None:
        """Let every held request finish (call it before the server stops)."""
        self._released.set()


def _error(message: str, code: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": code, "code": code}}).encode()


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def langchain_component(url: str, case: Any, **kwargs: Any) -> Callable[..., Any]:
    """A ClearingRetriever over ``case``'s documents with ChatOpenAI at ``url`` as agent
    and judge; returns ``run(asynchronous) -> list[Document]``."""
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda
    from langchain_openai import ChatOpenAI

    from meclear_integrations.langchain import ClearingRetriever, reference_config

    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    llm = ChatOpenAI(base_url=f"{url}/v1", api_key="sk-test-abcdefghijklmnop", model="stub")
    reference = kwargs.pop("reference", case.reference)
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: [d.model_copy() for d in docs]), llm=llm, **kwargs
    )
    config = reference_config(reference) if reference is not None else None

    async def run(asynchronous: bool) -> list[Any]:
        if asynchronous:
            return await retriever.ainvoke(case.query, config=config)
        return retriever.invoke(case.query, config=config)

    run.component = retriever  # type: ignore[attr-defined]
    return run


def llama_index_component(url: str, case: Any, **kwargs: Any) -> Callable[..., Any]:
    """A MeClearPostprocessor with LlamaIndex OpenAI at ``url``; ``run(asynchronous)``
    returns the postprocessed nodes."""
    from llama_index.core.schema import NodeWithScore, TextNode
    from llama_index.llms.openai import OpenAI

    from meclear_integrations.llama_index import MeClearPostprocessor

    nodes = [
        NodeWithScore(node=TextNode(id_=m.id, text=m.content), score=1.0 - i / 10)
        for i, m in enumerate(case.memories)
    ]
    llm = OpenAI(model="gpt-4o-mini", api_base=f"{url}/v1", api_key="sk-test-abcdefghijklmnop")
    reference = kwargs.pop("reference", case.reference)
    pp = MeClearPostprocessor(llm=llm, reference=reference, **kwargs)

    async def run(asynchronous: bool) -> list[Any]:
        if asynchronous:
            return await pp.apostprocess_nodes(nodes, query_str=case.query)
        return pp.postprocess_nodes(nodes, query_str=case.query)

    run.component = pp  # type: ignore[attr-defined]
    return run


COMPONENTS = {"langchain": langchain_component, "llama_index": llama_index_component}


def ids(items: list[Any]) -> list[str]:
    """Document ids or node ids."""
    return [getattr(i, "id", None) or i.node.node_id for i in items]


def meta(item: Any) -> dict[str, Any]:
    """The ``meclear`` metadata of a document or node."""
    holder = item.metadata if hasattr(item, "metadata") else item.node.metadata
    return holder["meclear"]
