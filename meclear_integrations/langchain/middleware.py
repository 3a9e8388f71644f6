"""MeClearMiddleware: verified clearance inside a LangChain v1 agent (``create_agent``).

Two places where retrieved memories reach an agent's model, both cleared by the same
engine, modes, ledger, triggers and events as ``ClearingRetriever`` (a
:class:`~meclear_integrations.langchain.MeClearCompressor` does the work):

- **tool results** (``wrap_tool_call`` / ``awrap_tool_call``): a retrieval tool's
  ``ToolMessage`` whose ``artifact`` is a list of ``Document`` s (a tool made with
  ``create_retriever_tool(..., response_format="content_and_artifact")`` or
  ``@tool(response_format="content_and_artifact")``), or whatever ``parse`` reads from the
  message, is cleared; the message comes back with the kept documents as its artifact and
  its content rendered from them (``render``; by default the page contents joined by a
  blank line, as ``create_retriever_tool`` renders them). Any other result (text, an error,
  a ``Command``, a tool not in ``tools``) passes untouched.
- **context injected before the model call** (``retriever=``): once per user turn
  (``before_model``) the middleware retrieves for the question, clears, and keeps the kept
  documents in the agent state; every model call of the turn (``wrap_model_call``) gets them
  appended to its system message (``context_prompt``).

The question is the text of the latest human message in the agent state (the user's
question of this turn, not the tool call's arguments): clearance asks the task agent the
user's question on coalitions of the retrieved memories. A turn with no human message
passes untouched. The reference answer, if any, comes through the invoke config's metadata
(``reference_config``), as for ``ClearingRetriever``.

Tracing: the clearance runs under the tool node's (or the ``before_model`` node's) run, so
LangSmith shows ``meclear_clearance`` (its outputs: the decision, cleared ids and cost; its
``meclear_evaluate`` children as ``TraceSettings.detail`` says) inside the agent's trace, and the
``meclear.*`` custom events reach ``astream_events`` and callback handlers.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Annotated, Any, NotRequired

from ._imports import require_langchain_agents

require_langchain_agents()

from langchain.agents.middleware.types import (  # noqa: E402
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.callbacks import Callbacks  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AnyMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import Runnable, RunnableConfig  # noqa: E402
from langgraph.config import get_config  # noqa: E402
from langgraph.prebuilt.tool_node import ToolCallRequest  # noqa: E402
from langgraph.runtime import Runtime  # noqa: E402
from langgraph.types import Command  # noqa: E402

from ..core.concurrency.step_driver import Call, Steps, arun_steps, run_steps  # noqa: E402
from ..core.errors import ConfigurationError  # noqa: E402
from .compressor import MeClearCompressor, compression  # noqa: E402

__all__ = ["DEFAULT_CONTEXT_PROMPT", "MeClearMiddleware", "MeClearState"]

DEFAULT_CONTEXT_PROMPT = "Use the following retrieved memories when they help:\n\n{context}"
"""The system-message addition of injected context (placeholder ``{context}``)."""

ToolResult = ToolMessage | Command[Any]
Parser = Callable[[ToolMessage], Sequence[Document] | None]
Renderer = Callable[[Sequence[Document]], str]


class MeClearState(AgentState[Any]):
    """The agent state keys of injected context (private: not in the graph's input/output)."""

    meclear_context: NotRequired[Annotated[list[Document], PrivateStateAttr]]
    """The cleared documents of the current user turn."""
    meclear_context_turn: NotRequired[Annotated[str, PrivateStateAttr]]
    """The user turn they were retrieved and cleared for (its message id, else its text)."""


def artifact_documents(message: ToolMessage) -> Sequence[Document] | None:
    """The default parser: the message's artifact when it is a non-empty list of documents.

    Args:
        message: The tool's result.

    Returns:
        The documents, or None (the result is not a retrieval result).
    """
    artifact = message.artifact
    if (
        isinstance(artifact, list | tuple)
        and artifact
        and all(isinstance(d, Document) for d in artifact)
    ):
        return list(artifact)
    return None


def join_page_contents(documents: Sequence[Document]) -> str:
    """The default renderer: page contents joined by a blank line (``create_retriever_tool``).

    Args:
        documents: The kept documents.

    Returns:
        The tool message's new content.
    """
    return "\n\n".join(d.page_content for d in documents)


def latest_question(messages: Sequence[Any]) -> str | None:
    """The text of the latest human message (None when there is none or it has no text).

    Args:
        messages: The conversation.

    Returns:
        The question.
    """
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            text = message.text
            return text if text.strip() else None
    return None


def _latest_turn(messages: Sequence[Any]) -> str | None:
    """The latest human message's id (its text when it has none): one key per user turn."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message.id or message.text
    return None


def _messages(state: Any) -> list[AnyMessage]:
    if isinstance(state, dict):
        return list(state.get("messages", []))
    return list(getattr(state, "messages", []) or [])


def _callbacks(config: RunnableConfig | None) -> Callbacks:
    return (config or {}).get("callbacks")


def _current_config() -> RunnableConfig | None:
    try:
        return get_config()
    except RuntimeError:  # outside a runnable context
        return None


class MeClearMiddleware(AgentMiddleware[MeClearState, Any, Any]):
    """Clears the memories a LangChain v1 agent retrieves, before its model reads them.

    Add it to ``create_agent(..., middleware=[...])``: retrieval tool results (a
    ``ToolMessage`` whose artifact is a list of documents, or what ``parse`` reads) are
    cleared for the user's latest question; with ``retriever=``, context is retrieved,
    cleared and added to the system message once per user turn. Other tool results pass
    untouched. Same engine, modes (``clear``, ``shadow``, ``background``), ledger, triggers
    and events as ``ClearingRetriever``: the settings are ``MeClearCompressor``'s.

    Setup:
        Install the ``langchain-agents`` extra (``langchain>=1``).

        ```bash
        pip install -U "meclear-integrations[langchain-agents]"
        ```

    Args:
        tools: Names of the retrieval tools to clear (None: every tool whose result
            parses as documents).
        parse: Reads the documents of a tool result (default :func:`artifact_documents`);
            None from it: the result passes untouched.
        render: Renders the kept documents as the tool message's content (default
            :func:`join_page_contents`).
        retriever: Retrieves context to inject before the model call (None: off).
        context_prompt: The system-message addition of injected context (``{context}``).
        clearing: A ready ``MeClearCompressor`` (instead of ``**settings``).
        **settings: ``MeClearCompressor`` settings (``llm``, ``judge``, ``mode``, ``loop``,
            ``clearance``, ...), checked strictly (a misspelled name raises).

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain_core.documents import Document
        from langchain_core.tools import tool

        from meclear_integrations.langchain import MeClearMiddleware, SimulatedChatModel
        from meclear_integrations.simulation import redundant_harm_example

        case = redundant_harm_example()  # SIMULATED: two stale memories say January
        llm = SimulatedChatModel.from_case(case)  # e.g. ChatOpenAI(model=...)


        @tool(response_format="content_and_artifact", description="Search the memories.")
        def search_memories(query: str):
            docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
            return " ".join(d.page_content for d in docs), docs  # text and documents


        agent = create_agent(
            llm, tools=[search_memories], middleware=[MeClearMiddleware(llm=llm)]
        )
        ```

    Usage:
        ```python
        from meclear_integrations.langchain import reference_config

        question = {"messages": [("user", case.query)]}
        out = agent.invoke(question, config=reference_config(case.reference))
        print(out["messages"][-1].text)  # December 2023
        print([d.id for d in out["messages"][2].artifact])  # ['g1', 'b1', 'b2', 'b3']
        ```
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> MeClearMiddleware:
        """With ``retriever=``, the variant that also adds context before the model call.

        Without it the agent gets no ``before_model`` node and no ``wrap_model_call`` hook
        (nothing to add to its graph or its traces).
        """
        if cls is MeClearMiddleware and kwargs.get("retriever") is not None:
            cls = _ContextMiddleware
        return super().__new__(cls)

    @property
    def name(self) -> str:
        """``MeClearMiddleware`` (the hooks' names in traces)."""
        return "MeClearMiddleware"

    def __init__(
        self,
        *,
        tools: Sequence[str] | None = None,
        parse: Parser | None = None,
        render: Renderer | None = None,
        retriever: Runnable[str, list[Document]] | None = None,
        context_prompt: str = DEFAULT_CONTEXT_PROMPT,
        clearing: MeClearCompressor | None = None,
        **settings: Any,
    ) -> None:
        super().__init__()
        if clearing is not None and settings:
            raise ConfigurationError(
                f"MeClearMiddleware: pass clearing= or its settings, not both ({sorted(settings)})"
            )
        if "{context}" not in context_prompt:
            raise ConfigurationError("MeClearMiddleware: context_prompt lacks {context}")
        self.clearing = clearing if clearing is not None else MeClearCompressor(**settings)
        self.tool_names = frozenset(tools) if tools is not None else None
        self.parse: Parser = parse if parse is not None else artifact_documents
        self.render: Renderer = render if render is not None else join_page_contents
        self.retriever = retriever
        self.context_prompt = context_prompt
        self._warned: set[str] = set()

    # ------------------------------------------------------------------ tool results
    def _retrieved(self, request: ToolCallRequest, result: ToolResult) -> list[Document] | None:
        """The documents of a retrieval result to clear, or None (pass untouched)."""
        if not isinstance(result, ToolMessage) or result.status == "error":
            return None
        if self.tool_names is not None and request.tool_call["name"] not in self.tool_names:
            return None
        documents = self.parse(result)
        if not documents:
            self._warn_if_flattened(request.tool_call["name"], result)
            return None
        return list(documents)

    def _warn_if_flattened(self, tool_name: str, result: ToolMessage) -> None:
        """Warn once per tool whose documents reached the message only as their repr."""
        text = result.content if isinstance(result.content, str) else ""
        if text.startswith("[Document(") and tool_name not in self._warned:
            self._warned.add(tool_name)
            warnings.warn(
                f"MeClearMiddleware: tool {tool_name!r} returned documents as text, so they "
                "pass uncleared: declare it with response_format='content_and_artifact' "
                "(returning (text, documents)) or pass parse=",
                UserWarning,
                stacklevel=2,
            )

    def _cleared(self, result: ToolMessage, kept: Sequence[Document]) -> ToolMessage:
        return result.model_copy(update={"content": self.render(kept), "artifact": list(kept)})

    @staticmethod
    def _config(request: ToolCallRequest) -> RunnableConfig | None:
        runtime = getattr(request, "runtime", None)
        config = getattr(runtime, "config", None)
        return config if config is not None else _current_config()

    def _tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolResult | Awaitable[ToolResult]],
    ) -> Steps[ToolResult]:
        """:meth:`wrap_tool_call`'s steps: the tool, then the clearance of its documents."""
        result: ToolResult = yield Call.on_both(partial(handler, request))
        documents = self._retrieved(request, result)
        question = latest_question(_messages(request.state))
        if documents is None or question is None:
            return result
        assert isinstance(result, ToolMessage)
        callbacks = _callbacks(self._config(request))
        kept = yield compression(self.clearing, documents, question, callbacks)
        return self._cleared(result, kept)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolResult],
    ) -> ToolResult:
        """Run the tool; clear the documents of a retrieval result.

        Args:
            request: The tool call, the agent state and the runtime.
            handler: Runs the tool.

        Returns:
            The tool's result, its documents cleared when it is a retrieval result.
        """
        return run_steps(self._tool_call(request, handler))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        """Async :meth:`wrap_tool_call` (same arguments and result; agent and judge awaited)."""
        return await arun_steps(self._tool_call(request, handler))

    # ------------------------------------------------------------------ lifecycle
    def run_audits(self, *, limit: int | None = None) -> Any:
        """Run the due background audits now (``ClearingComponent.run_audits``).

        Args:
            limit: The most audits to run.

        Returns:
            Their outcomes.
        """
        return self.clearing.run_audits(limit=limit)

    def close(self) -> None:
        """Stop the background audit workers the clearing component started."""
        self.clearing.close()


class _ContextMiddleware(MeClearMiddleware):
    """``MeClearMiddleware(retriever=...)``: also adds cleared context before the model call."""

    state_schema = MeClearState

    def _turn(self, state: MeClearState) -> tuple[str, str] | None:
        """(question, turn key) of a turn whose context is still to retrieve (None: off/done)."""
        if self.retriever is None:
            return None
        messages = _messages(state)
        question, turn = latest_question(messages), _latest_turn(messages)
        if question is None or turn is None or state.get("meclear_context_turn") == turn:
            return None
        return question, turn

    def _turn_context(self, state: MeClearState) -> Steps[dict[str, Any] | None]:
        """:meth:`before_model`'s steps: the retrieval, then the clearance of its documents."""
        pending = self._turn(state)
        if pending is None:
            return None
        assert self.retriever is not None
        question, turn = pending
        callbacks = _callbacks(_current_config())
        config: RunnableConfig = {"callbacks": callbacks}
        documents = yield Call(
            partial(self.retriever.invoke, question, config=config),
            partial(self.retriever.ainvoke, question, config=config),
        )
        kept = yield compression(self.clearing, list(documents), question, callbacks)
        return {"meclear_context": list(kept), "meclear_context_turn": turn}

    def before_model(self, state: MeClearState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Once per user turn: retrieve for the question, clear, keep the documents in state.

        Args:
            state: The agent state.
            runtime: The runtime.

        Returns:
            The state update (None: nothing to retrieve).
        """
        return run_steps(self._turn_context(state))

    async def abefore_model(
        self, state: MeClearState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async :meth:`before_model` (same arguments and result; agent and judge awaited)."""
        return await arun_steps(self._turn_context(state))

    def _with_context(self, request: ModelRequest) -> ModelRequest:
        documents = request.state.get("meclear_context") if self.retriever is not None else None
        if not isinstance(documents, list) or not documents:
            return request
        addition = self.context_prompt.format(context=self.render(documents))
        system = request.system_message
        text = f"{system.text}\n\n{addition}" if system is not None and system.text else addition
        return request.override(system_message=SystemMessage(content=text))

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        """Add the turn's cleared context to the system message (``retriever=`` only).

        Args:
            request: The model request.
            handler: Calls the model.

        Returns:
            The model's response.
        """
        return handler(self._with_context(request))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        """Async :meth:`wrap_model_call` (same arguments and result)."""
        return await handler(self._with_context(request))
