"""The offline stand-in model as a LlamaIndex LLM, and a deterministic offline embedding.

:class:`SimulatedLLM` (a ``CustomLLM``; a simulation, not a language model) is a thin
adapter around :class:`~meclear_integrations.simulation.StandInModel` in world mode: the
prompt goes to the stand-in, which reads the known memories in it and answers as the
world's reader would, or acts as the judge on one of the package's judge prompts
(:mod:`meclear_integrations.simulation.standin`). A ``VectorStoreIndex`` query engine, its
response synthesizer and the postprocessor's own agent prompt thus run their real path
offline. Figures it produces are SIMULATED.

:class:`HashEmbedding` is a deterministic bag-of-words embedding (signed feature hashing of
lower-cased word tokens, L2-normalised): texts that share words are close, so retrieval
over it is meaningful and reproducible without a model.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.generic_utils import completion_response_to_chat_response
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.custom import CustomLLM
from pydantic import Field, PrivateAttr

from ..core.concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..simulation import EvidenceWorld, SimulatedCase, StandInModel, TextReader
from ..simulation.faults import Faults

__all__ = ["HashEmbedding", "SimulatedLLM"]

_TOKEN = re.compile(r"[a-z0-9]+")


class SimulatedLLM(CustomLLM):
    """A LlamaIndex LLM backed by the simulated evidence world (offline; SIMULATED figures).

    ``acomplete`` / ``achat`` are native coroutines (``CustomLLM``'s defaults call the sync
    method); ``latency`` adds a per-call delay (``asyncio.sleep`` on the async path,
    ``time.sleep`` on the sync one) to make concurrency observable in tests and demos.

    Args:
        world: The world whose reader answers.
        memories: Known memory id -> text.
        case_id: Seeds the world's randomness.
        latency: Seconds each call takes.
        faults: Which calls fault and how (``meclear_integrations.simulation.faults.RandomFaults``,
            ...; None: none).

    Example:
        ```python
        from meclear_integrations.llama_index import SimulatedLLM
        from meclear_integrations.simulation import redundant_harm_example

        case = redundant_harm_example()
        llm = SimulatedLLM.from_case(case)
        shown = " ".join(m.content for m in case.memories if m.id == "g1")
        print(llm.complete(f"Memories: {shown} Question: {case.query}"))  # December 2023
        ```
    """

    world: EvidenceWorld = Field(exclude=True, description="The world whose reader answers.")
    memories: dict[str, str] = Field(
        description=(
            "Known memory id -> text; a memory counts as shown when its text occurs in the prompt."
        ),
    )
    case_id: str = Field(
        default="",
        description="Seeds the world's randomness together with the coalition and trial.",
    )
    latency: float = Field(default=0.0, ge=0.0, description="Seconds each call takes.")
    faults: Faults | None = Field(
        default=None, exclude=True, description="Which calls fault and how (None: none)."
    )

    _stand_in: StandInModel = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        """Build the world-mode stand-in that replies."""
        super().model_post_init(context)
        reader = TextReader(self.world, self.memories, case_id=self.case_id)
        self._stand_in = StandInModel(reader, faults=self.faults)

    @property
    def stand_in(self) -> StandInModel:
        """The stand-in model that replies (its ``calls``, ``faults_injected``)."""
        return self._stand_in

    @classmethod
    def from_case(cls, case: SimulatedCase, **kwargs: Any) -> SimulatedLLM:
        """The LLM of a built-in simulated case.

        Args:
            case: A case such as ``redundant_harm_example()``.
            **kwargs: Further fields (e.g. ``latency``).

        Returns:
            The LLM.
        """
        return cls(world=case.world, memories=case.texts, case_id=case.case_id, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearSimulatedLLM"

    @property
    def metadata(self) -> LLMMetadata:
        """The LLM's metadata (a completion model named ``meclear-simulated-world``)."""
        return LLMMetadata(model_name="meclear-simulated-world", is_chat_model=False)

    def _completing(self, prompt: str) -> Steps[CompletionResponse]:
        """:meth:`complete`'s steps: the ``latency`` wait, then the stand-in's reply."""
        if self.latency:
            yield Call(partial(time.sleep, self.latency), partial(asyncio.sleep, self.latency))
        stand_in = self._stand_in
        text = yield Call(partial(stand_in.reply, prompt), partial(stand_in.areply, prompt))
        return CompletionResponse(text=text)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """Answer ``prompt`` from the simulated world.

        Args:
            prompt: The prompt text.
            formatted: Ignored (the ``LLM`` signature).
            **kwargs: Ignored.

        Returns:
            The completion.
        """
        return run_steps(self._completing(prompt))

    @llm_completion_callback()
    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        """Async :meth:`complete` (same arguments and result; ``latency`` awaited)."""
        return await arun_steps(self._completing(prompt))

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        """:meth:`complete` as a one-chunk stream.

        Args:
            prompt: The prompt text.
            formatted: Ignored (the ``LLM`` signature).
            **kwargs: Ignored.

        Returns:
            A generator yielding the completion once.
        """
        response = self.complete(prompt, formatted=formatted, **kwargs)

        def gen() -> CompletionResponseGen:
            yield CompletionResponse(text=response.text, delta=response.text)

        return gen()

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """Answer the last message from the simulated world.

        Args:
            messages: The chat messages.
            **kwargs: Ignored.

        Returns:
            The assistant's reply.
        """
        prompt = self.messages_to_prompt(messages)  # type: ignore[misc]
        response = await self.acomplete(prompt, formatted=True, **kwargs)
        return completion_response_to_chat_response(response)


def _hash_vector(text: str, dim: int) -> list[float]:
    vector = [0.0] * dim
    for token in _TOKEN.findall(text.lower()):
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        vector[value % dim] += 1.0 if (value >> 63) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm else vector


class HashEmbedding(BaseEmbedding):
    """Deterministic bag-of-words embedding (feature hashing); no model, no network.

    Args:
        dim: The vector size.

    Example:
        ```python
        from meclear_integrations.llama_index import HashEmbedding

        print(len(HashEmbedding(dim=8).get_text_embedding("John was in Italy")))  # 8
        ```
    """

    dim: int = Field(default=256, ge=8, description="Vector size.")

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearHashEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return _hash_vector(query, self.dim)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return _hash_vector(query, self.dim)

    def _get_text_embedding(self, text: str) -> list[float]:
        return _hash_vector(text, self.dim)
