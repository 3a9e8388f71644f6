"""An LLM that cannot answer: the default detects it, the postprocessor says so in node
metadata and events and clears nothing (``stops.cannot_answer``, issue 29 item 6)."""

from __future__ import annotations

from meclear_integrations.core.config import ClearanceConfig
from meclear_integrations.llama_index import MeClearPostprocessor, SimulatedLLM
from meclear_integrations.llama_index.events import (
    ClearanceEndEvent,
    ClearanceStartEvent,
    ScreeningEndEvent,
    ScreeningStartEvent,
)
from meclear_integrations.simulation.faults import ScriptedFaults

SILENT = ScriptedFaults(every="I don't know.")
"""The stand-in says "I don't know." to every prompt."""


def processor(case, **kwargs) -> MeClearPostprocessor:
    return MeClearPostprocessor(
        llm=SimulatedLLM.from_case(case, faults=SILENT),
        judge=SimulatedLLM.from_case(case),
        reference=case.reference,
        **kwargs,
    )


def check(result_nodes, case, events) -> None:
    assert [n.node.node_id for n in result_nodes] == [m.id for m in case.memories]
    meta = result_nodes[0].node.metadata["meclear"]
    assert meta["status"] == "skipped" and meta["status_reason"] == "model_cannot_answer"
    assert not any(n.node.metadata["meclear"]["cleared"] for n in result_nodes)
    assert [type(e) for e in events.events] == [
        ScreeningStartEvent,
        ScreeningEndEvent,
        ClearanceStartEvent,
        ClearanceEndEvent,
    ]
    assert events.events[1].payload["stopped"] == "model_cannot_answer"
    assert events.events[-1].payload["cleared_ids"] == []


def test_default_reports_a_model_that_cannot_answer(case, nodes, events) -> None:
    out = processor(case).postprocess_nodes(nodes, query_str=case.query)
    check(out, case, events)
    result = processor(
        case, clearance=ClearanceConfig(stops={"cannot_answer": False, "unexplained": False})
    ).clear_nodes(nodes, case.query)
    assert result.report is not None and result.report.status_reason != "model_cannot_answer"


async def test_async_reports_a_model_that_cannot_answer(case, nodes, events) -> None:
    out = await processor(case).apostprocess_nodes(nodes, query_str=case.query)
    check(out, case, events)
