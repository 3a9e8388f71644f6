"""MeClearMiddleware's sync and async hooks run one flow each (``_tool_call``,
``_turn_context``): the same tool or retriever calls, model prompts (each path on its own model
method), results, ``meclear.*`` events and errors. SIMULATED agent and judge."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langgraph.types import Command

from meclear_integrations.langchain import MeClearMiddleware, reference_config
from tests.support.recording_models import RecordingChat, canonical_prompts, plain

CALL = {"name": "search_memories", "args": {"query": "x"}, "id": "c1"}


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.events.append((name, data.get("stage", ""), data.get("phase", "")))


class Request:
    """A tool call request (the fields the middleware reads)."""

    tool_call = CALL
    runtime = None  # the config is the enclosing run's (as in a tools node)

    def __init__(self, question: str | None) -> None:
        self.state = {"messages": [HumanMessage(content=question)] if question else []}


class Tool:
    """The tool behind ``handler``: logs each call and the path it came by."""

    def __init__(self, result: Any) -> None:
        self.result = result
        self.calls: list[str] = []

    def sync(self, request: Any) -> Any:
        self.calls.append("sync")
        if isinstance(self.result, Exception):
            raise self.result
        return self.result

    async def asynchronous(self, request: Any) -> Any:
        self.calls.append("async")
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def _wrap(
    mode: str, middleware: MeClearMiddleware, request: Request, tool: Tool, config: Any
) -> Any:
    """The hook inside a run (the tools node's), as the agent calls it."""
    if mode == "async":

        async def ahook(r: Request) -> Any:
            return await middleware.awrap_tool_call(r, tool.asynchronous)  # type: ignore[arg-type]

        return asyncio.run(RunnableLambda(ahook).ainvoke(request, config=config))
    hook = RunnableLambda(lambda r: middleware.wrap_tool_call(r, tool.sync))
    return hook.invoke(request, config=config)


def _message(documents: list[Document], status: str = "success") -> ToolMessage:
    text = "\n\n".join(d.page_content for d in documents)
    return ToolMessage(content=text, tool_call_id="c1", artifact=documents, status=status)


def test_the_tool_hook_takes_the_same_steps_on_both_paths(case, documents) -> None:
    runs = {}
    for mode in ("sync", "async"):
        llm, events, tool = RecordingChat.from_case(case), Events(), Tool(_message(documents))
        config = {**reference_config(case.reference), "callbacks": [events]}
        result = _wrap(mode, MeClearMiddleware(llm=llm), Request(case.query), tool, config)
        runs[mode] = (result, llm, sorted(events.events), tool.calls)
    (s_res, s_llm, s_events, s_tool), (a_res, a_llm, a_events, a_tool) = (
        runs["sync"],
        runs["async"],
    )
    assert s_tool == ["sync"] and a_tool == ["async"]
    assert s_llm.paths == {"sync"} and a_llm.paths == {"async"}
    assert canonical_prompts(s_llm.prompts) == canonical_prompts(a_llm.prompts)
    assert [plain(d) for d in s_res.artifact] == [plain(d) for d in a_res.artifact]
    assert [d.id for d in s_res.artifact] == ["g1", "b1", "b2", "b3"]
    assert s_res.content == a_res.content and s_res.tool_call_id == a_res.tool_call_id
    assert ("meclear.clearance", "clearance", "end") in s_events
    assert s_events == a_events


@pytest.mark.parametrize("what", ["command", "error status", "no question", "tool raises"])
def test_what_passes_untouched_or_raises_does_so_on_both_paths(case, documents, what) -> None:
    outcomes = {}
    for mode in ("sync", "async"):
        llm = RecordingChat.from_case(case)
        result: Any = {
            "command": Command(update={"messages": []}),
            "error status": _message(documents, status="error"),
            "no question": _message(documents),
            "tool raises": TimeoutError("tool down"),
        }[what]
        tool = Tool(result)
        question = None if what == "no question" else case.query
        config = reference_config(case.reference)
        try:
            got = _wrap(mode, MeClearMiddleware(llm=llm), Request(question), tool, config)
            outcomes[mode] = got is result
        except TimeoutError as exc:
            outcomes[mode] = str(exc)
        assert llm.prompts == [] and len(tool.calls) == 1
    expected = "tool down" if what == "tool raises" else True
    assert outcomes["sync"] == outcomes["async"] == expected


class Retriever:
    """The retriever behind ``retriever=``: logs each call and the path it came by."""

    def __init__(self, documents: list[Document], fail: bool = False) -> None:
        self.documents, self.fail = documents, fail
        self.calls: list[tuple[str, str]] = []

    def _found(self, path: str, question: str) -> list[Document]:
        self.calls.append((path, question))
        if self.fail:
            raise ConnectionError("vector store down")
        return [d.model_copy(deep=True) for d in self.documents]

    def runnable(self) -> RunnableLambda:
        async def afound(question: str) -> list[Document]:
            return self._found("async", question)

        return RunnableLambda(lambda q: self._found("sync", q), afunc=afound)


def _before(mode: str, middleware: Any, state: dict[str, Any], config: Any) -> Any:
    """The hook inside a run (the ``before_model`` node's), as the agent calls it."""
    if mode == "async":

        async def ahook(s: dict[str, Any]) -> Any:
            return await middleware.abefore_model(s, None)

        return asyncio.run(RunnableLambda(ahook).ainvoke(state, config=config))
    return RunnableLambda(lambda s: middleware.before_model(s, None)).invoke(state, config=config)


def _state(question: str, turn: str | None = None) -> dict[str, Any]:
    message = HumanMessage(content=question, id="h1")
    state: dict[str, Any] = {"messages": [message]}
    if turn is not None:
        state["meclear_context_turn"] = turn
    return state


def test_the_context_hook_takes_the_same_steps_on_both_paths(case, documents) -> None:
    runs = {}
    for mode in ("sync", "async"):
        llm, events, retriever = RecordingChat.from_case(case), Events(), Retriever(documents)
        middleware = MeClearMiddleware(llm=llm, retriever=retriever.runnable())
        config = {**reference_config(case.reference), "callbacks": [events]}
        update = _before(mode, middleware, _state(case.query), config)
        runs[mode] = (update, llm, sorted(events.events), retriever.calls)
    (s_up, s_llm, s_events, s_ret), (a_up, a_llm, a_events, a_ret) = runs["sync"], runs["async"]
    assert s_ret == [("sync", case.query)] and a_ret == [("async", case.query)]
    assert s_llm.paths == {"sync"} and a_llm.paths == {"async"}
    assert canonical_prompts(s_llm.prompts) == canonical_prompts(a_llm.prompts)
    assert s_up.keys() == a_up.keys() == {"meclear_context", "meclear_context_turn"}
    assert s_up["meclear_context_turn"] == a_up["meclear_context_turn"]
    assert [plain(d) for d in s_up["meclear_context"]] == [
        plain(d) for d in a_up["meclear_context"]
    ]
    assert [d.id for d in s_up["meclear_context"]] == ["g1", "b1", "b2", "b3"]
    assert ("meclear.clearance", "clearance", "end") in s_events
    assert s_events == a_events


def test_the_context_hook_skips_and_fails_alike_on_both_paths(case, documents) -> None:
    outcomes: dict[str, list[Any]] = {"sync": [], "async": []}
    for mode in ("sync", "async"):
        llm, retriever = RecordingChat.from_case(case), Retriever(documents)
        middleware = MeClearMiddleware(llm=llm, retriever=retriever.runnable())
        config = reference_config(case.reference)
        done = _state(case.query)
        turn = _before(mode, middleware, done, config)["meclear_context_turn"]
        calls = len(retriever.calls)
        # the turn's context is already there: nothing is retrieved again
        outcomes[mode].append(_before(mode, middleware, _state(case.query, turn), config))
        outcomes[mode].append(len(retriever.calls) - calls)
        broken = Retriever(documents, fail=True)
        failing = MeClearMiddleware(llm=llm, retriever=broken.runnable())
        with pytest.raises(ConnectionError) as info:
            _before(mode, failing, _state(case.query), config)
        outcomes[mode].append((str(info.value), [q for _, q in broken.calls]))
    assert outcomes["sync"] == outcomes["async"] == [None, 0, ("vector store down", [case.query])]
