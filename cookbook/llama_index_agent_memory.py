"""A LlamaIndex agent whose long-term memory is cleared, and whose memory writes are admitted.

Offline: the agent's LLM and the task agent / judge are the SIMULATED evidence world as a
LlamaIndex LLM (figures are simulated, not a real model's); the admission decisions come
from the SCRIPTED ConMem stand-in. The session's long-term memory holds the paper's
redundant-harm case (John in Italy): one memory says December 2023, two paraphrased stale
ones say January 2023.

What it shows:

1. a ``ReActAgent`` with ``Memory`` over a stock ``VectorMemoryBlock`` answers January 2023;
2. the same agent with ``MeClearMemoryBlock(..., node_postprocessors=[MeClearPostprocessor(
   llm=llm)])`` answers December 2023: the retrieved memories are cleared for the latest
   user message (not the recent messages joined, which is the block's retrieval query);
3. with ``admission=`` the messages ``Memory`` flushes into the block are decided by ConMem
   one by one: the allergy is written, the assistant's small talk is not.

Run: ``python cookbook/llama_index_agent_memory.py`` (needs ``meclear-integrations[llama-index]``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.agent.workflow import ReActAgent
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.memory.memory_blocks.vector import VectorMemoryBlock
from llama_index.core.schema import TextNode

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.llama_index import (
    HashEmbedding,
    MeClearMemoryBlock,
    MeClearPostprocessor,
    SimulatedLLM,
    query_reference,
)
from meclear_integrations.llama_index.admission import AdmissionTransform
from meclear_integrations.llama_index.vector_store import TextVectorStore
from meclear_integrations.simulation import redundant_harm_example

SESSION = "john"
EMBED = HashEmbedding()  # e.g. OpenAIEmbedding()


def session_memories(case: Any) -> TextVectorStore:
    """The session's long-term memories, as earlier flushes of the block wrote them."""
    store = TextVectorStore()  # any vector store that stores text (Chroma, Qdrant...)
    store.add(
        [
            TextNode(
                id_=m.id,
                text=m.content,
                metadata={"session_id": SESSION},
                embedding=EMBED.get_text_embedding(m.content),
            )
            for m in case.memories
        ]
    )
    return store


async def ask(agent: ReActAgent, memory: Memory, question: str) -> str:
    return str(await agent.run(question, memory=memory))


def main() -> dict[str, Any]:
    """Ask with a stock and a clearing memory block; gate a memory write; print and return."""
    case = redundant_harm_example()
    llm = SimulatedLLM.from_case(case)  # e.g. llama_index.llms.openai.OpenAI(...)
    agent = ReActAgent(tools=[], llm=llm)
    print("model: SIMULATED evidence world (offline)")
    print(f"question: {case.query}   (reference: {case.reference})\n")

    stock = VectorMemoryBlock(
        vector_store=session_memories(case), embed_model=EMBED, similarity_top_k=6
    )
    # ReActAgent reads no system message from memory: the memory goes into the user turn
    memory = Memory.from_defaults(session_id=SESSION, memory_blocks=[stock], insert_method="user")
    calls = llm.stand_in.calls  # the SIMULATED model's replies (answers and verdicts)
    with query_reference(case.reference):  # the gold answer, when you have one
        plain = asyncio.run(ask(agent, memory, case.query))
    plain_calls, calls = llm.stand_in.calls - calls, llm.stand_in.calls
    print(f"VectorMemoryBlock            -> {plain}")

    # the clearance: the clearing block, with MeClearPostprocessor among its postprocessors
    block = MeClearMemoryBlock(
        vector_store=session_memories(case),
        embed_model=EMBED,
        similarity_top_k=6,
        node_postprocessors=[MeClearPostprocessor(llm=llm)],
    )
    memory = Memory.from_defaults(session_id=SESSION, memory_blocks=[block], insert_method="user")
    with query_reference(case.reference):
        cleared = asyncio.run(ask(agent, memory, case.query))
    clearance_calls = llm.stand_in.calls - calls - plain_calls
    print(f"MeClearMemoryBlock           -> {cleared}   (+{clearance_calls} model calls: the run")
    print("  reads its memory twice, at the start and at the end; each read is a clearance)\n")

    written = TextVectorStore()
    gated = MeClearMemoryBlock(
        vector_store=written,
        embed_model=EMBED,
        admission=AdmissionTransform(admitter=ConMemAdmitter(ScriptedAdmissionModel())),
    )
    memory = Memory.from_defaults(
        session_id=SESSION, memory_blocks=[gated], token_limit=60, token_flush_size=20
    )
    allergy = (
        "I'm allergic to shellfish, so never suggest shrimp dishes to me. "
        "What's a quick weeknight dinner?"
    )
    for _ in range(3):  # enough turns for Memory to flush the oldest into the block
        asyncio.run(memory.aput(ChatMessage(role="user", content=allergy)))
        asyncio.run(
            memory.aput(
                ChatMessage(role="assistant", content="Try a lemon-garlic chicken traybake.")
            )
        )
    texts = [node.text for node in written.get_nodes()]
    kept_allergy = all("allergic" in t for t in texts) and bool(texts)
    kept_small_talk = any("traybake" in t for t in texts)
    print(f"admission (SCRIPTED): flushed batches written {len(texts)}, ", end="")
    print(f"allergy kept {kept_allergy}, small talk kept {kept_small_talk}")
    return {
        "plain": plain,
        "cleared": cleared,
        "clearance_calls": clearance_calls,
        "batches": len(texts),
        "allergy": kept_allergy,
        "small_talk": kept_small_talk,
    }


if __name__ == "__main__":
    main()
