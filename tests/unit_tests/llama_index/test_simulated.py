"""The simulated world as a LlamaIndex LLM, and the deterministic embedding."""

from __future__ import annotations

import json
import threading

from llama_index.core.base.llms.types import ChatMessage

from meclear_integrations.judges.answer_prompts import format_answer_prompt
from meclear_integrations.judges.protocol import (
    parse_verdict,
    reference_free_prompt,
    reference_prompt,
)
from meclear_integrations.llama_index import HashEmbedding, SimulatedLLM


def test_answers_from_the_memories_in_the_prompt(case, llm: SimulatedLLM) -> None:
    full = format_answer_prompt(case.query, case.memories)
    assert llm.complete(full).text == "January 2023"
    without_faults = [m for m in case.memories if m.id not in ("f1", "f2")]
    assert llm.complete(format_answer_prompt(case.query, without_faults)).text == "December 2023"
    assert llm.complete(format_answer_prompt(case.query, [])).text == "I don't know"


async def test_async_paths_are_native_coroutines(case) -> None:
    class Probe(SimulatedLLM):
        def complete(self, prompt, formatted=False, **kwargs):  # the sync path must not run
            raise AssertionError("sync complete called from an async path")

    llm = Probe.from_case(case)
    gold = case.memories[0].content
    assert (await llm.acomplete(gold)).text == "December 2023"
    reply = await llm.achat([ChatMessage(role="user", content=gold)])
    assert reply.message.content == "December 2023"


def test_acts_as_judge_on_judge_prompts(case, llm: SimulatedLLM) -> None:
    def verdict(prompt: str, nonce: str) -> float:
        return parse_verdict(llm.complete(prompt).text, nonce).score

    nonce = "0123456789ab"
    right = reference_prompt(
        case.query, "december 2023", "December 2023", structured=False, nonce=nonce
    )
    assert verdict(right, nonce) == 1.0
    wrong = reference_prompt(
        case.query, "January 2023", "December 2023", structured=False, nonce=nonce
    )
    assert verdict(wrong, nonce) == 0.0
    # reference-free: compared with the world's answer on the memories shown to the judge
    gold_only = [case.memories[0]]
    free = reference_free_prompt(
        case.query, "December 2023", gold_only, structured=False, nonce=nonce
    )
    assert verdict(free, nonce) == 1.0
    # a structured-output prompt (no nonce) is answered with the JSON object
    structured = reference_prompt(case.query, "January 2023", "December 2023", structured=True)
    assert json.loads(llm.complete(structured).text)["correct"] is False


def test_latency_is_spent_on_the_calling_path(case) -> None:
    llm = SimulatedLLM.from_case(case, latency=0.01)
    thread = threading.get_ident()
    assert llm.complete(case.memories[0].content).text == "December 2023"
    assert threading.get_ident() == thread


def test_hash_embedding_is_deterministic_and_lexical() -> None:
    a, b = HashEmbedding(dim=64), HashEmbedding(dim=64)
    text = "John was in Italy in January 2023."
    assert a.get_text_embedding(text) == b.get_text_embedding(text)
    q = a.get_query_embedding("When was John in Italy?")
    near = a.get_text_embedding("John's trip to Italy.")
    far = a.get_text_embedding("Maria likes cooking pasta.")
    dot = lambda u, v: sum(x * y for x, y in zip(u, v, strict=True))  # noqa: E731
    assert abs(dot(q, q) - 1.0) < 1e-9
    assert dot(q, near) > dot(q, far)
