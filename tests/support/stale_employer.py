"""A scripted loop scenario with redundant stale copies: "Where does Sam work?"

The store holds the current fact (``t1``, NewCo), ``copies`` stale copies of the old one
(``s1``..``sN``, OldCo) and background notes. The agent answers the employer most memory
blocks of its prompt name; a tie goes to the current fact. So with two stale copies,
removing either fixes the answer; with three, any two must go and the third left beside the
current fact hangs on the tie-break. The judge compares with the reference when given one;
without one it trusts the newest dated memory shown that names an employer.

Every model call is counted (:attr:`Counter.calls`): the regression tests assert that no
full re-clearance follows a fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.schema import NodeWithScore, TextNode
from pydantic import PrivateAttr

QUESTION = "Where does Sam work?"
REFERENCE = "NewCo"
EMPLOYERS = ("NewCo", "OldCo")
_BLOCK = re.compile(r"<memory\b[^>]*>(.*?)</memory>", re.S)
_STALE = (
    "Sam works at OldCo as an engineer.",
    "Sam's employer is OldCo.",
    "Sam commutes to the OldCo office every day.",
    "Sam got a badge from OldCo.",
)


def memories(copies: int) -> list[tuple[str, str, str]]:
    """(id, text, date) of the store: background, the stale copies, the current fact."""
    rows = [("b1", "Sam likes hiking in the Alps.", "2023-02-01")]
    rows += [(f"s{i + 1}", _STALE[i], f"2022-0{i + 1}-10") for i in range(copies)]
    rows += [("b2", "Sam has a cat named Miso.", "2023-05-05")]
    rows += [("t1", "Sam moved to NewCo in March 2024.", "2024-03-01")]
    return rows


def documents(copies: int) -> list[Document]:
    return [Document(page_content=t, metadata={"date": d}, id=i) for i, t, d in memories(copies)]


def nodes(copies: int) -> list[NodeWithScore]:
    return [
        NodeWithScore(node=TextNode(id_=i, text=t, metadata={"date": d}), score=1.0)
        for i, t, d in memories(copies)
    ]


def majority_answer(prompt: str) -> str:
    """The employer most memory blocks of ``prompt`` name; a tie goes to NewCo."""
    votes = dict.fromkeys(EMPLOYERS, 0)
    for block in _BLOCK.findall(prompt):
        for name in EMPLOYERS:
            if name in block:
                votes[name] += 1
                break
    best = max(EMPLOYERS, key=lambda n: (votes[n], n == "NewCo"))
    return best if votes[best] else "I don't know"


def verdict(answer: str, context: Any, reference: str | None = None) -> float:
    """With a reference: does the answer name it; without: the newest dated employer."""
    if reference is not None:
        return float(reference.lower() in answer.lower())
    naming = [m for m in context or () if any(n in m.content for n in EMPLOYERS)]
    if not naming:
        return 0.0
    newest = max(naming, key=lambda m: m.metadata.get("date", ""))
    name = next(n for n in EMPLOYERS if n in newest.content)
    return float(name.lower() in answer.lower())


@dataclass
class Counter:
    """Counts the agent's and the judge's calls."""

    agent_calls: int = 0
    judge_calls: int = 0
    prompts: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return self.agent_calls + self.judge_calls

    def agent(self, prompt: Any) -> str:
        self.agent_calls += 1
        text = prompt if isinstance(prompt, str) else str(prompt)
        return majority_answer(text)

    def judge(self, answer: str, context: Any, reference: str | None = None) -> float:
        self.judge_calls += 1
        return verdict(answer, context, reference)

    def langchain_llm(self) -> RunnableLambda:
        return RunnableLambda(self.agent, name="scripted_agent")

    def llama_llm(self) -> ScriptedLLM:
        llm = ScriptedLLM()
        llm._counter = self
        return llm


class ScriptedLLM(CustomLLM):
    """LlamaIndex LLM answering like :func:`majority_answer`, counted by its Counter."""

    _counter: Counter | None = PrivateAttr(default=None)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-majority")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        assert self._counter is not None
        return CompletionResponse(text=self._counter.agent(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError
