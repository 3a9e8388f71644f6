"""The offline stand-in model as a LangChain chat model (a simulation, not an LLM).

:class:`SimulatedChatModel` is a thin adapter around
:class:`~meclear_integrations.simulation.StandInModel` in world mode: the messages are
joined into one prompt, the stand-in replies (reading the known memories in the prompt and
answering as the world's reader would, or acting as the judge on one of the package's judge
prompts; :mod:`meclear_integrations.simulation.standin`), and the reply becomes the
message. Demos and tests thus run the real retriever, prompt and chain path offline.
Streamed (``stream``, ``astream_events``), a reply comes word by word, as a provider's
would. ``faults`` (:mod:`meclear_integrations.simulation.faults`) makes chosen calls raise
or return garbage (``meclear soak``). Figures it produces are SIMULATED.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import PrivateAttr

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
            Which calls fault (``meclear_integrations.simulation.RandomFaults``, ...).

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

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._result(self._stand_in.reply(self._prompt(messages)))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._result(await self._stand_in.areply(self._prompt(messages)))

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
        for chunk in self._chunks(await self._stand_in.areply(self._prompt(messages))):
            if run_manager is not None:
                await run_manager.on_llm_new_token(str(chunk.message.content), chunk=chunk)
            yield chunk
