"""A scripted live chain without a reference answer (the failure a coalition-only judge
causes): a correction dated 2024 and two stale notes dated 2022 that outnumber it.

- The agent answers the city most memories in its prompt state (stale while both stale
  notes are present).
- The reference-free judge trusts the newest dated memory it is shown that states a city
  (so it needs the memories' dates); given a reference it compares against the reference.

With the whole retrieved context in view the judge always sees the correction, so only
removing the stale notes can make the answer pass. Shown only the coalition, the judge
accepts the stale answer once the correction is gone: deleting the evidence against an
answer makes that answer "supported".
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.schema import NodeWithScore, TextNode
from pydantic import Field

from meclear_integrations.core.memory import Memory

QUESTION = "Which city does John live in?"
REFERENCE = "Berlin"
MEMORIES = (
    ("g1", "John moved to Berlin last spring; the flat in Paris is gone.", "2024-03-02"),
    ("b1", "John enjoys long bike rides on weekends.", "2023-06-11"),
    ("f1", "John lives in Paris, near the canal.", "2022-05-01"),
    ("b2", "John's sister works as a nurse.", "2023-01-20"),
    ("f2", "John said his home is in Paris.", "2022-09-10"),
    ("b3", "John is learning to play the cello.", "2023-11-03"),
)
CITIES = ("Berlin", "Paris")
_BLOCK = re.compile(r"<memory\b[^>]*>(.*?)</memory>", re.S)


def memories() -> list[Memory]:
    return [Memory(id=i, content=t, metadata={"date": d}) for i, t, d in MEMORIES]


def documents() -> list[Document]:
    return [Document(page_content=t, metadata={"date": d}, id=i) for i, t, d in MEMORIES]


def nodes() -> list[NodeWithScore]:
    return [
        NodeWithScore(node=TextNode(id_=i, text=t, metadata={"date": d}), score=1.0)
        for i, t, d in MEMORIES
    ]


def majority_answer(prompt: str) -> str:
    """The city most memory blocks of ``prompt`` name (a block counts for the city it names
    first; a tie goes to Paris, the stale city); "I don't know" when none does."""
    votes = {city: 0 for city in CITIES}
    for block in _BLOCK.findall(prompt):
        named = [c for c in CITIES if c in block]
        if named:
            votes[min(named, key=block.index)] += 1
    best = max(CITIES, key=lambda c: (votes[c], c == "Paris"))
    return best if votes[best] else "I don't know"


def dated_verdict(answer: str, context: Any, reference: str | None = None) -> float:
    """With a reference: does the answer name it. Without: does the answer name the city
    of the newest dated memory shown (0 when none names a city)."""
    if reference is not None:
        return float(reference.lower() in answer.lower())
    stating = [m for m in context or () if any(c in m.content for c in CITIES)]
    if not stating:
        return 0.0
    newest = max(stating, key=lambda m: m.metadata.get("date", ""))
    named = min((c for c in CITIES if c in newest.content), key=newest.content.index)
    return float(named.lower() in answer.lower())


class Recorder:
    """The agent's prompts and the judge's calls, for assertions."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.judged: list[str] = []

    def agent(self, prompt: Any) -> str:
        text = prompt if isinstance(prompt, str) else str(prompt)
        self.prompts.append(text)
        return majority_answer(text)

    def judge(self, answer: str, context: Any, reference: str | None = None) -> float:
        self.judged.append(answer)
        return dated_verdict(answer, context, reference)

    def langchain_llm(self) -> RunnableLambda:
        return RunnableLambda(self.agent, name="scripted_agent")


class ScriptedLLM(CustomLLM):
    """LlamaIndex LLM answering like :func:`majority_answer` (records its prompts)."""

    prompts: list[str] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-majority")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text=majority_answer(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
        raise NotImplementedError
