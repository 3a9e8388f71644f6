"""MeClearPostprocessor under faults: fail-open by default (every node, metadata, an event
saying why), fail-closed on request, index and input nodes byte-identical on every path,
concurrent queries on one instance kept apart."""

from __future__ import annotations

import asyncio
import json

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.schema import NodeWithScore, TextNode
from pydantic import Field

from meclear_integrations import ClearanceConfig, EvaluatorError
from meclear_integrations.core.failures.kind import PermanentFailureError
from meclear_integrations.judges import ExactMatchJudge
from meclear_integrations.llama_index import (
    HashEmbedding,
    MeClearPostprocessor,
    MeClearStageEvent,
    SimulatedLLM,
    query_reference,
)
from meclear_integrations.simulation import redundant_harm_example

KEY = "sk-proj-Zx9Qw8Er7Ty6Ui5Op4As3Df2"
FAST = ClearanceConfig(failure={"retry": {"initial_backoff": 0.0, "jitter": 0.0}})


class Faulty(SimulatedLLM):
    """The simulated LLM, raising ``error`` from call ``fail_after + 1`` on."""

    fail_after: int = 3
    error: str = "timeout"
    calls: int = 0

    def _count(self) -> None:
        self.calls += 1
        if self.calls > self.fail_after:
            if self.error == "timeout":
                raise TimeoutError("provider timed out")
            raise RuntimeError(f"provider rejected key {KEY}")

    def complete(self, prompt, formatted=False, **kwargs):  # type: ignore[no-untyped-def]
        self._count()
        return super().complete(prompt, formatted=formatted, **kwargs)

    async def acomplete(self, prompt, formatted=False, **kwargs):  # type: ignore[no-untyped-def]
        self._count()
        return await super().acomplete(prompt, formatted=formatted, **kwargs)


class Collect(BaseEventHandler):
    events: list = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "Collect"

    def handle(self, event, **kwargs) -> None:  # type: ignore[no-untyped-def]
        if isinstance(event, MeClearStageEvent):
            self.events.append(event)


@pytest.fixture
def collected():  # type: ignore[no-untyped-def]
    root = get_dispatcher()
    handler = Collect()
    root.add_event_handler(handler)
    yield handler
    root.event_handlers.remove(handler)


def _setup():  # type: ignore[no-untyped-def]
    case = redundant_harm_example()
    text_nodes = [
        TextNode(id_=m.id, text=m.content, metadata={"s": i}) for i, m in enumerate(case.memories)
    ]
    index = VectorStoreIndex(text_nodes, embed_model=HashEmbedding())
    before = json.dumps(index.storage_context.to_dict(), sort_keys=True, default=str)
    nodes = index.as_retriever(similarity_top_k=6).retrieve(case.query)
    snapshot = [n.model_dump_json() for n in nodes]

    def untouched() -> None:
        after = json.dumps(index.storage_context.to_dict(), sort_keys=True, default=str)
        assert after == before and [n.model_dump_json() for n in nodes] == snapshot

    return case, nodes, untouched


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_rejected_key_raises_at_once_and_changes_nothing(
    collected, asynchronous: bool
) -> None:  # type: ignore[no-untyped-def]
    case, nodes, untouched = _setup()
    pp = MeClearPostprocessor(
        llm=Faulty.from_case(case, error="rejected"), reference=case.reference, clearance=FAST
    )
    with pytest.raises(PermanentFailureError, match="RuntimeError") as info:
        if asynchronous:
            await pp.apostprocess_nodes(nodes, query_str=case.query)
        else:
            pp.postprocess_nodes(nodes, query_str=case.query)
    untouched()
    setting = {"agent": "llm= or response_synthesizer=", "judge": "judge= (or llm=)"}
    assert KEY not in str(info.value) and setting[info.value.role] in str(info.value)
    ends = [e for e in collected.events if e.payload.get("phase") == "error"]
    assert ends and KEY not in json.dumps([e.model_dump(mode="json") for e in collected.events])


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_fail_open_by_default_keeps_every_node_and_changes_nothing(
    collected, asynchronous: bool
) -> None:  # type: ignore[no-untyped-def]
    case, nodes, untouched = _setup()
    pp = MeClearPostprocessor(
        llm=Faulty.from_case(case, error="timeout"), reference=case.reference, clearance=FAST
    )
    if asynchronous:
        out = await pp.apostprocess_nodes(nodes, query_str=case.query)
    else:
        out = pp.postprocess_nodes(nodes, query_str=case.query)
    untouched()
    assert [n.node.node_id for n in out] == [n.node.node_id for n in nodes]
    assert [n.node.get_content() for n in out] == [n.node.get_content() for n in nodes]
    assert all(o.node is not n.node for o, n in zip(out, nodes, strict=True))
    for n in out:
        meta = n.node.metadata["meclear"]
        assert meta["status"] == "failed" and not meta["cleared"] and KEY not in json.dumps(meta)
    errors = [e for e in collected.events if e.payload.get("phase") == "error"]
    assert errors and errors[-1].payload["outcome"] == "fail_open"
    assert KEY not in json.dumps([e.model_dump(mode="json") for e in collected.events])


def test_fail_closed_on_request_changes_nothing() -> None:
    case, nodes, untouched = _setup()
    pp = MeClearPostprocessor(
        llm=Faulty.from_case(case), reference=case.reference, clearance=FAST, on_failure="closed"
    )
    with pytest.raises(EvaluatorError, match="timed out"):
        pp.postprocess_nodes(nodes, query_str=case.query)
    untouched()


async def test_one_instance_many_concurrent_queries_stay_apart(collected) -> None:  # type: ignore[no-untyped-def]
    case, nodes, untouched = _setup()
    pp = MeClearPostprocessor(
        llm=SimulatedLLM.from_case(case),
        judge=ExactMatchJudge(),
        clearance=ClearanceConfig(estimator="exact"),
    )
    references = [case.reference if i % 2 == 0 else "January 2023" for i in range(10)]

    async def one(reference: str) -> list[NodeWithScore]:
        with query_reference(reference):
            return await pp.apostprocess_nodes(nodes, query_str=case.query)

    outs = await asyncio.gather(*(one(r) for r in references))
    untouched()
    for out, reference in zip(outs, references, strict=True):
        got = sorted(n.node.node_id for n in out)
        expected = (
            ["b1", "b2", "b3", "g1"]
            if reference == case.reference
            else sorted(n.node.node_id for n in nodes)
        )
        assert got == expected
    by_query: dict[str, list[str]] = {}
    for e in collected.events:
        by_query.setdefault(e.query_id, []).append(e.payload["phase"])
    assert len(by_query) == 10
    assert all(p[0] == "start" and p[-1] == "end" for p in by_query.values())
