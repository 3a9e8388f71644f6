"""LlamaIndex agent memory: clearance for the latest user message, admission on writes.

:class:`MeClearMemoryBlock` is a ``VectorMemoryBlock`` (use it wherever one goes:
``Memory.from_defaults(memory_blocks=[...])``, any agent workflow) with two additions:

- **the question of clearance.** A stock ``VectorMemoryBlock`` hands its
  ``node_postprocessors`` the text of the last ``retrieval_context_window`` messages joined
  (user, assistant and tool turns alike), which is the right retrieval query but not a
  question a task agent can answer. While this block retrieves, the text of the latest
  *user* message is the current memory question (:func:`memory_question`), and
  ``MeClearPostprocessor`` clears the retrieved memories for it. With no user message
  among the messages, the block's query text is used. (A ``MeClearPostprocessor`` in a
  stock ``VectorMemoryBlock`` also works: it then clears for the joined recent messages.)
- **admission on writes** (``admission=``): the messages ``Memory`` flushes into the block
  are decided one by one with ConMem (an ``AdmissionTransform``: its events, limiter and
  ``on_error`` policy), each message a candidate and the whole flushed batch its
  historical context; only the admitted messages are written (one node per batch, as the
  stock block writes). A batch with none admitted writes nothing; a message without text
  (a bare tool call) is no candidate and is not written.

Cost: an agent workflow reads its memory (``memory.aget()``) at the start of a run and
again after tool calls and at the end, and each read retrieves and runs the block's
postprocessors. In ``mode="clear"`` each read is a clearance (the engine's answer cache
does not span reads); ``mode="background"`` (recommended for agent memory) withholds what
the ledger proved harmful with no model call and queues one audit per question (repeat
reads join it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory.memory_blocks.vector import VectorMemoryBlock
from llama_index.core.schema import TextNode
from pydantic import Field

from .admission import AdmissionTransform

__all__ = [
    "MeClearMemoryBlock",
    "current_memory_question",
    "latest_user_text",
    "memory_question",
]

_QUESTION: ContextVar[str | None] = ContextVar("meclear_memory_question", default=None)


@contextmanager
def memory_question(question: str | None) -> Iterator[None]:
    """Make ``question`` the question of the clearances run inside the block (a context).

    Args:
        question: The latest user message's text (None: the query text is used).

    Yields:
        Nothing; the previous question is restored on exit.
    """
    token = _QUESTION.set(question)
    try:
        yield
    finally:
        _QUESTION.reset(token)


def current_memory_question() -> str | None:
    """The question set by :func:`memory_question` in this context, if any.

    Returns:
        The question, or None outside a memory block's retrieval.
    """
    return _QUESTION.get()


def _text(message: ChatMessage) -> str:
    return "".join(getattr(block, "text", "") or "" for block in message.blocks)


def latest_user_text(messages: Sequence[ChatMessage] | None) -> str | None:
    """The text of the latest user message (None: none, or it has no text).

    Args:
        messages: The messages the memory block was given.

    Returns:
        The text.
    """
    for message in reversed(list(messages or [])):
        if message.role == MessageRole.USER:
            text = _text(message)
            return text if text.strip() else None
    return None


class MeClearMemoryBlock(VectorMemoryBlock):
    """A ``VectorMemoryBlock`` cleared for the latest user message, with admission on writes.

    Args:
        vector_store: The vector store (it must store text).
        embed_model: The embedding model.
        node_postprocessors: Put a ``MeClearPostprocessor`` here: it clears the retrieved
            memories for the latest user message.
        admission: A ConMem ``AdmissionTransform`` deciding each message written to the
            block (None: every message is written, as the stock block does).
        similarity_top_k: Memories retrieved per read.

    Example:
        ```python
        from llama_index.core.memory import Memory

        from meclear_integrations.llama_index import (
            HashEmbedding,
            MeClearMemoryBlock,
            MeClearPostprocessor,
            SimulatedLLM,
        )
        from meclear_integrations.llama_index.vector_store import TextVectorStore
        from meclear_integrations.simulation import redundant_harm_example

        case = redundant_harm_example()  # SIMULATED: two stale memories say January
        llm = SimulatedLLM.from_case(case)  # e.g. llama_index.llms.openai.OpenAI(...)
        block = MeClearMemoryBlock(
            vector_store=TextVectorStore(),  # any vector store that stores text
            embed_model=HashEmbedding(),
            similarity_top_k=6,
            node_postprocessors=[MeClearPostprocessor(llm=llm, reference=case.reference)],
        )
        memory = Memory.from_defaults(
            session_id="john", memory_blocks=[block], insert_method="user"
        )
        ```

        The session's past memories (written by earlier flushes; here directly), then an
        agent run:

        ```python
        import asyncio

        from llama_index.core.agent.workflow import ReActAgent
        from llama_index.core.schema import TextNode

        block.vector_store.add([
            TextNode(
                id_=m.id,
                text=m.content,
                metadata={"session_id": "john"},
                embedding=HashEmbedding().get_text_embedding(m.content),
            )
            for m in case.memories
        ])
        agent = ReActAgent(tools=[], llm=llm)


        async def main():
            return await agent.run(case.query, memory=memory)


        print(asyncio.run(main()))  # December 2023
        ```
    """

    admission: AdmissionTransform | None = Field(
        default=None,
        exclude=True,
        description="ConMem admission of each message written to the block (None: all).",
    )

    async def _aget(
        self,
        messages: list[ChatMessage] | None = None,
        session_id: str | None = None,
        **block_kwargs: Any,
    ) -> str:
        with memory_question(latest_user_text(messages)):
            return await super()._aget(messages, session_id=session_id, **block_kwargs)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        if self.admission is None or not messages:
            await super()._aput(messages)
            return
        admitted = await self._admitted(messages)
        if admitted:
            await super()._aput(admitted)

    async def _admitted(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        """The messages ConMem admits, in order (each decided against the whole batch)."""
        assert self.admission is not None
        texts = [_text(m) for m in messages]
        turns = [
            {"role": m.role.value, "content": t}
            for m, t in zip(messages, texts, strict=True)
            if t.strip()
        ]
        nodes = [
            TextNode(id_=f"message-{i}", text=t, metadata={self.admission.context_key: turns})
            for i, t in enumerate(texts)
            if t.strip()
        ]
        kept = {n.node_id for n in await self.admission.acall(nodes)}
        return [m for i, m in enumerate(messages) if f"message-{i}" in kept]
