"""Agent memory: MeClearPostprocessor inside a VectorMemoryBlock of Memory, in a ReActAgent run.

SIMULATED: the agent's LLM and the task agent / judge are the simulated world's reader; the
session's memories (two stale ones say January) live in a text-storing vector store. The
admission gate uses the SCRIPTED ConMem model.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core.agent.workflow import ReActAgent
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.memory.memory_blocks.vector import VectorMemoryBlock
from llama_index.core.schema import QueryBundle, TextNode

import meclear_integrations.llama_index.postprocessor as postprocessor_module
from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.llama_index import (
    HashEmbedding,
    Loop,
    MeClearMemoryBlock,
    MeClearPostprocessor,
    SimulatedLLM,
    query_reference,
)
from meclear_integrations.llama_index.admission import AdmissionTransform
from meclear_integrations.llama_index.memory import (
    current_memory_question,
    latest_user_text,
    memory_question,
)
from meclear_integrations.llama_index.vector_store import TextVectorStore
from meclear_integrations.simulation import SimulatedCase

SESSION = "john"
EMBED = HashEmbedding()
EARLIER = [
    ChatMessage(role="user", content="I am planning a photo book of my travels."),
    ChatMessage(role="assistant", content="Happy to help: which trips should it cover?"),
    ChatMessage(role="user", content="Start with Italy."),
    ChatMessage(role="assistant", content="Noted, Italy first."),
]


def session_store(case: SimulatedCase) -> TextVectorStore:
    """The session's past memories, as a VectorMemoryBlock would have written them."""
    store = TextVectorStore()
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


def memory_with(block: VectorMemoryBlock) -> Memory:
    # ReActAgent keeps no system message from memory: the memory goes into the user turn
    return Memory.from_defaults(session_id=SESSION, memory_blocks=[block], insert_method="user")


async def ask(case: SimulatedCase, memory: Memory, history: list[ChatMessage] | None = None) -> str:
    agent = ReActAgent(tools=[], llm=SimulatedLLM.from_case(case))
    with query_reference(case.reference):
        response = await agent.run(case.query, memory=memory, chat_history=history)
    return str(response)


@pytest.fixture
def questions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The question of every clearance the postprocessor runs."""
    seen: list[str] = []
    original = postprocessor_module._question

    def spy(bundle: Any) -> QueryBundle:
        chosen = original(bundle)
        seen.append(chosen.query_str)
        return chosen

    monkeypatch.setattr(postprocessor_module, "_question", spy)
    return seen


def test_stock_block_without_clearance_answers_from_the_stale_memories(case) -> None:
    block = VectorMemoryBlock(
        vector_store=session_store(case), embed_model=EMBED, similarity_top_k=6
    )
    assert asyncio.run(ask(case, memory_with(block))) == "January 2023"


def test_agent_memory_is_cleared_for_the_latest_user_message(case, questions, events) -> None:
    block = MeClearMemoryBlock(
        vector_store=session_store(case),
        embed_model=EMBED,
        similarity_top_k=6,
        node_postprocessors=[MeClearPostprocessor(llm=SimulatedLLM.from_case(case))],
    )
    answer = asyncio.run(ask(case, memory_with(block), history=list(EARLIER)))
    assert answer == "December 2023"
    assert questions and set(questions) == {case.query}  # not the recent messages joined
    ends = [e for e in events.events if e.stage == "clearance" and e.payload.get("phase") == "end"]
    assert len(ends) == len(questions)  # one instrumented clearance per memory read
    assert all(sorted(e.payload["cleared_ids"]) == ["f1", "f2"] for e in ends)


def test_stock_block_clears_for_its_query_text(case, questions) -> None:
    """A MeClearPostprocessor in a stock VectorMemoryBlock gets the recent messages joined."""
    block = VectorMemoryBlock(
        vector_store=session_store(case),
        embed_model=EMBED,
        similarity_top_k=6,
        node_postprocessors=[MeClearPostprocessor(llm=SimulatedLLM.from_case(case))],
    )
    asyncio.run(ask(case, memory_with(block), history=list(EARLIER)))
    assert questions and all(q != case.query and case.query in q for q in questions)


def test_background_mode_in_agent_memory(case, tmp_path) -> None:
    ledger = HarmLedger(tmp_path / "ledger.db")
    clearing = MeClearPostprocessor(
        llm=SimulatedLLM.from_case(case),
        mode="background",
        loop=Loop(ledger=ledger, audit_workers=0),
    )
    block = MeClearMemoryBlock(
        vector_store=session_store(case),
        embed_model=EMBED,
        similarity_top_k=6,
        node_postprocessors=[clearing],
    )
    assert asyncio.run(ask(case, memory_with(block))) == "January 2023"  # nothing proven yet
    outcomes = clearing.run_audits()
    # one audit per distinct retrieved context of the run's reads (repeat reads join)
    assert outcomes and all(o.state == "done" for o in outcomes)
    assert asyncio.run(ask(case, memory_with(block))) == "December 2023"
    clearing.close()
    ledger.close()


def test_admission_gate_on_memory_writes(case) -> None:
    store = TextVectorStore()
    block = MeClearMemoryBlock(
        vector_store=store,
        embed_model=EMBED,
        admission=AdmissionTransform(admitter=ConMemAdmitter(ScriptedAdmissionModel())),
    )
    batch = [
        ChatMessage(
            role="user",
            content="I'm allergic to shellfish, so never suggest shrimp dishes to me. "
            "What's a quick weeknight dinner?",
        ),
        ChatMessage(role="assistant", content="Try a lemon-garlic chicken traybake."),
    ]
    asyncio.run(block.aput(batch, session_id=SESSION))
    [node] = store.get_nodes()
    assert "allergic to shellfish" in node.text and "traybake" not in node.text
    assert node.metadata == {"session_id": SESSION}
    # none admitted: nothing written
    asyncio.run(block.aput([batch[1].model_copy()], session_id=SESSION))
    assert len(store.get_nodes()) == 1


def test_admission_gate_through_memory_flushes(case) -> None:
    store = TextVectorStore()
    block = MeClearMemoryBlock(
        vector_store=store,
        embed_model=EMBED,
        admission=AdmissionTransform(admitter=ConMemAdmitter(ScriptedAdmissionModel())),
    )
    memory = Memory.from_defaults(
        session_id=SESSION, memory_blocks=[block], token_limit=60, token_flush_size=20
    )
    allergy = (
        "I'm allergic to shellfish, so never suggest shrimp dishes to me. "
        "What's a quick weeknight dinner?"
    )
    for _ in range(3):
        asyncio.run(memory.aput(ChatMessage(role="user", content=allergy)))
        asyncio.run(
            memory.aput(
                ChatMessage(role="assistant", content="Try a lemon-garlic chicken traybake.")
            )
        )
    texts = [n.text for n in store.get_nodes()]
    assert texts  # the flushed batches reached the block
    assert all("allergic" in t and "traybake" not in t for t in texts)


def test_latest_user_text_and_the_question_context() -> None:
    messages = [
        ChatMessage(role="user", content="first"),
        ChatMessage(role="assistant", content="reply"),
        ChatMessage(role="user", content="second"),
        ChatMessage(role="tool", content="result"),
    ]
    assert latest_user_text(messages) == "second"
    assert latest_user_text([ChatMessage(role="assistant", content="x")]) is None
    assert latest_user_text([ChatMessage(role="user", content="  ")]) is None
    assert latest_user_text(None) is None
    assert current_memory_question() is None
    with memory_question("q"):
        assert current_memory_question() == "q"
    assert current_memory_question() is None
