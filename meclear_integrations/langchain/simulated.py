"""The offline stand-in model as a LangChain chat model (a simulation, not an LLM).

:class:`SimulatedChatModel` is a thin adapter around
:class:`~meclear_integrations.simulation.StandInModel` in world mode: the messages are
joined into one prompt, the stand-in replies (reading the known memories in the prompt and
answering as the world's reader would, or acting as the judge on one of the package's judge
prompts; :mod:`meclear_integrations.simulation.standin`), and the reply becomes the
message. Demos and tests thus run the real retriever, prompt and chain path offline.
Streamed (``stream``, ``astream_events``), a reply comes word by word, as a provider's
would. With tools bound (``bind_tools``, as ``create_agent`` does) it is a SIMULATED
tool-calling agent: a user turn is answered by calling the first bound tool with the
question as its first argument, and the turn after the tool results by the world's reader
on everything the conversation shows. ``faults``
(:mod:`meclear_integrations.simulation.faults`) makes chosen calls raise or return garbage
(``meclear soak``). Figures it produces are SIMULATED.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from functools import partial
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

from ..core.concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..simulation import EvidenceWorld, SimulatedCase, StandInModel, TextReader
from ..simulation.faults import Faults

__all__ = ["SimulatedChatModel"]


class SimulatedChatModel(BaseChatModel):
    """A chat model backed by the simulated evidence world (offline; SIMULATED figures).

    Key init args:
        world: EvidenceWorld
            The world whose reader answers.
        memories: dict[str, str]
            Known memory id -> text.
        case_id: str
            Seeds the world's randomness.
        faults: Faults | None
            Which calls fault (``meclear_integrations.simulation.faults.RandomFaults``, ...).

    Instantiate:
        ```python
        from meclear_integrations.langchain import SimulatedChatModel
        from meclear_integrations.simulation import redundant_harm_example

        case = redundant_harm_example()
        llm = SimulatedChatModel.from_case(case)
        ```

    Usage:
        ```python
        shown = " ".join(m.content for m in case.memories if m.id == "g1")
        print(llm.invoke(f"Memories: {shown} Question: {case.query}").text)  # December 2023
        ```
    """

    world: EvidenceWorld
    """The world whose reader answers."""
    memories: dict[str, str]
    """Known memory id -> text; a memory counts as shown when its text occurs in the prompt."""
    case_id: str = ""
    """Seeds the world's randomness together with the coalition and trial."""
    faults: Faults | None = None
    """Which calls fault and how (None: none)."""
    tool_call: tuple[str, str] | None = None
    """Set by ``bind_tools``: (tool name, argument name) of the tool a user turn calls."""

    _stand_in: StandInModel = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        """Build the world-mode stand-in that replies."""
        reader = TextReader(self.world, self.memories, case_id=self.case_id)
        self._stand_in = StandInModel(reader, faults=self.faults)

    @property
    def stand_in(self) -> StandInModel:
        """The stand-in model that replies (its ``calls``, ``faults_injected``)."""
        return self._stand_in

    @classmethod
    def from_case(cls, case: SimulatedCase, **kwargs: Any) -> SimulatedChatModel:
        """The chat model of a built-in simulated case.

        Args:
            case: A case such as ``redundant_harm_example()``.
            **kwargs: Further fields of the model.

        Returns:
            The chat model.
        """
        return cls(world=case.world, memories=case.texts, case_id=case.case_id, **kwargs)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[Any, AIMessage]:
        """A copy that calls the first of ``tools`` on each user turn (a SIMULATED agent).

        Args:
            tools: The tools (``create_agent`` passes the agent's); the first is called
                with the question as its first argument.
            tool_choice: Ignored (the first tool is always called on a user turn).
            **kwargs: Ignored.

        Returns:
            The tool-calling copy (sharing this model's stand-in and its call count).
        """
        if not tools:
            return self
        function = convert_to_openai_tool(tools[0])["function"]
        properties = list(function.get("parameters", {}).get("properties", {})) or ["query"]
        copy = self.model_copy(update={"tool_call": (function["name"], properties[0])})
        copy._stand_in = self._stand_in
        return copy

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Runnable[Any, Any]:
        """Not offered: the simulated model replies in text (its judge verdicts included).

        Raises:
            NotImplementedError: Always (callers fall back to text replies).
        """
        raise NotImplementedError("SimulatedChatModel replies in text only")

    def _tool_turn(self, messages: list[BaseMessage]) -> AIMessage | None:
        """The tool call that answers a user turn, when tools are bound."""
        if self.tool_call is None or not messages or not isinstance(messages[-1], HumanMessage):
            return None
        name, argument = self.tool_call
        call = {
            "name": name,
            "args": {argument: messages[-1].text},
            "id": f"call_{uuid.uuid4().hex[:12]}",
        }
        return AIMessage(content="", tool_calls=[call])

    @property
    def _llm_type(self) -> str:
        return "meclear-simulated-world"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"case_id": self.case_id, "memories": len(self.memories)}

    @staticmethod
    def _prompt(messages: list[BaseMessage]) -> str:
        return "\n".join(str(m.text) for m in messages)

    @staticmethod
    def _result(text: str) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def _generating(self, messages: list[BaseMessage]) -> Steps[ChatResult]:
        """:meth:`_generate`'s steps: a tool call turn, else the stand-in's reply."""
        turn = self._tool_turn(messages)
        if turn is not None:
            return ChatResult(generations=[ChatGeneration(message=turn)])
        prompt, stand_in = self._prompt(messages), self._stand_in
        text = yield Call(partial(stand_in.reply, prompt), partial(stand_in.areply, prompt))
        return self._result(text)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return run_steps(self._generating(messages))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return await arun_steps(self._generating(messages))

    @staticmethod
    def _call_chunk(turn: AIMessage) -> ChatGenerationChunk:
        call = turn.tool_calls[0]
        piece = tool_call_chunk(
            name=call["name"], args=json.dumps(call["args"]), id=call["id"], index=0
        )
        return ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[piece]))

    @staticmethod
    def _chunks(text: str) -> list[ChatGenerationChunk]:
        words = re.findall(r"\S+\s*|\s+", text) or [""]
        return [ChatGenerationChunk(message=AIMessageChunk(content=word)) for word in words]

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        turn = self._tool_turn(messages)
        if turn is not None:
            yield self._call_chunk(turn)
            return
        for chunk in self._chunks(self._stand_in.reply(self._prompt(messages))):
            if run_manager is not None:
                run_manager.on_llm_new_token(str(chunk.message.content), chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        turn = self._tool_turn(messages)
        if turn is not None:
            yield self._call_chunk(turn)
            return
        for chunk in self._chunks(await self._stand_in.areply(self._prompt(messages))):
            if run_manager is not None:
                await run_manager.on_llm_new_token(str(chunk.message.content), chunk=chunk)
            yield chunk
