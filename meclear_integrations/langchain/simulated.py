"""The simulated evidence world as a LangChain chat model (a simulation, not an LLM).

:class:`SimulatedChatModel` reads the memories from the prompt it is given (whichever
known memory texts occur in it, via :class:`~meclear_integrations.simulation.TextReader`)
and answers as the world's reader would, so demos and tests run the real retriever, prompt
and chain path offline. Given one of the package's judge prompts it acts as the judge:
reference prompts are graded by normalised exact match; reference-free prompts compare
the candidate with the world's answer on the memories shown to the judge. Replies to
judge prompts follow the judges' protocol (a reason, then ``VERDICT <nonce>: CORRECT`` /
``INCORRECT`` with the prompt's nonce; a JSON verdict object for a structured-output
prompt; :mod:`meclear_integrations.simulation.replies`). Streamed (``stream``,
``astream_events``), a reply comes word by word, as a provider's would. Figures it
produces are SIMULATED.
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

from ..simulation import EvidenceWorld, SimulatedCase, TextReader
from ..simulation.replies import simulated_reply

__all__ = ["SimulatedChatModel", "simulated_reply"]


class SimulatedChatModel(BaseChatModel):
    """A chat model backed by the simulated evidence world (offline; SIMULATED figures).

    Key init args:
        world: EvidenceWorld
            The world whose reader answers.
        memories: dict[str, str]
            Known memory id -> text.
        case_id: str
            Seeds the world's randomness.

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

    _reader: TextReader = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        """Build the reader that finds the known memories in a prompt."""
        self._reader = TextReader(self.world, self.memories, case_id=self.case_id)

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

    def _reply(self, messages: list[BaseMessage]) -> ChatResult:
        prompt = "\n".join(str(m.text) for m in messages)
        message = AIMessage(content=simulated_reply(self._reader, prompt))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._reply(messages)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._reply(messages)

    def _chunks(self, messages: list[BaseMessage]) -> list[ChatGenerationChunk]:
        text = str(self._reply(messages).generations[0].message.content)
        words = re.findall(r"\S+\s*|\s+", text) or [""]
        return [ChatGenerationChunk(message=AIMessageChunk(content=word)) for word in words]

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in self._chunks(messages):
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
        for chunk in self._chunks(messages):
            if run_manager is not None:
                await run_manager.on_llm_new_token(str(chunk.message.content), chunk=chunk)
            yield chunk
