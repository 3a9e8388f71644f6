"""The simulated chat model's ``_generate`` / ``_agenerate`` are one flow: a tool-call turn
when tools are bound, else the stand-in's ``reply`` / ``areply``, with the same messages.
SIMULATED."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.tools import tool

from meclear_integrations.langchain import SimulatedChatModel
from tests.unit_tests.llama_index.test_simulated_paths import Recorder


@tool
def search_memories(query: str) -> str:
    """Search the user's memories."""
    return query


def _invoke(mode: str, model: Any, value: Any) -> Any:
    if mode == "async":
        return asyncio.run(model.ainvoke(value))
    return model.invoke(value)


def test_both_paths_reply_alike(case) -> None:
    prompt = f"Question: {case.query}\nAnswer:"
    out = {}
    for mode in ("sync", "async"):
        llm = SimulatedChatModel.from_case(case)
        recorder = Recorder(llm._stand_in)
        llm._stand_in = recorder
        out[mode] = (_invoke(mode, llm, prompt).content, recorder.calls)
    (s_text, s_calls), (a_text, a_calls) = out["sync"], out["async"]
    assert s_text == a_text and s_text
    assert s_calls == [("reply", prompt)] and a_calls == [("areply", prompt)]


def test_both_paths_call_a_bound_tool_alike(case) -> None:
    out = {}
    for mode in ("sync", "async"):
        llm = SimulatedChatModel.from_case(case)
        recorder = Recorder(llm._stand_in)
        llm._stand_in = recorder
        message = _invoke(mode, llm.bind_tools([search_memories]), case.query)
        calls = [(c["name"], c["args"]) for c in message.tool_calls]
        out[mode] = (calls, recorder.calls)
    assert out["sync"] == out["async"]
    assert out["sync"] == ([("search_memories", {"query": case.query})], [])
