"""A live LangChain chain with no reference answer: what clearance does, and what it cannot.

A production chain has no gold answer, so the judge is reference-free. The recommended
setup, shown here:

- the judge sees the whole retrieved context (``judge_context="full"``, the default), so
  deleting the evidence against an answer can never make that answer look supported;
- the memories' dates and sources reach the agent and the judge, fenced as data
  (``metadata_keys``; the default picks up ``date``, ``created_at``, ``source``...): in a
  real store, time is the main signal that a fact is stale;
- a stronger judge than the agent, through ``judge=``;
- ``mode="shadow"`` first: run clearance, read ``metadata["meclear"]`` and the events, drop
  nothing, until you trust it on your traffic.

Offline by default: the agent is the SIMULATED evidence world as a chat model (it answers
what most retrieved notes say) and the judge is a scripted date-aware function standing in
for a stronger judge model (it trusts the newest dated note that answers the question).
Nothing here is a real model's figure. With OPENAI_API_KEY set (and optionally
OPENAI_BASE_URL, OPENAI_MODEL for the agent, OPENAI_JUDGE_MODEL for the judge) both are
``langchain_openai.ChatOpenAI`` models at temperature 0.

The store holds John's trip to Italy: the newest note (2024) says December 2023, two older
notes (2023) say January 2023. The plain chain answers January. Cleared with the
date-aware judge, the chain answers December; a judge that only saw each coalition would
accept both answers, so clearance abstains (``status="unverified"``) and the chain answers
as without clearance. Run: ``python cookbook/langchain_without_reference.py``.
"""

from __future__ import annotations

import os
import re
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough

from meclear_integrations.langchain import ClearingRetriever, Documents, SimulatedChatModel
from meclear_integrations.simulation import redundant_harm_example

DATES = {
    "g1": "2024-01-05",  # the correction: the newest note
    "b1": "2023-03-02",
    "f1": "2023-02-10",  # stale
    "b2": "2023-05-19",
    "f2": "2023-02-21",  # stale
    "b3": "2023-06-30",
}
MONTH_YEAR = re.compile(
    r"\b(January|February|March|April|May|June|July|August|September|October|November|"
    r"December) (\d{4})\b"
)
PROMPT = ChatPromptTemplate.from_template(
    "Answer the question from the notes below; reply with the answer only.\n\n"
    "Notes:\n{context}\n\nQuestion: {question}"
)


def date_aware_judge(answer: str, context: Any) -> float:
    """Scripted stand-in for a stronger judge: the answer is correct when it names the
    month of the newest dated note that names one (offline only)."""
    dated = [m for m in context or () if MONTH_YEAR.search(m.content) and "date" in m.metadata]
    if not dated:
        return 0.0
    newest = max(dated, key=lambda m: m.metadata["date"])
    match = MONTH_YEAR.search(newest.content)
    assert match is not None
    return float(match.group(0).lower() in answer.lower())


def make_models() -> tuple[BaseChatModel, Any, str]:
    """(agent, judge, label): ChatOpenAI when OPENAI_API_KEY is set, else offline."""
    if os.environ.get("OPENAI_API_KEY"):
        from langchain_openai import ChatOpenAI

        agent_model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
        judge_model = os.environ.get("OPENAI_JUDGE_MODEL", agent_model)
        agent = ChatOpenAI(model=agent_model, temperature=0)
        judge = ChatOpenAI(model=judge_model, temperature=0)
        return agent, judge, f"ChatOpenAI agent {agent_model}, judge {judge_model}"
    agent = SimulatedChatModel.from_case(redundant_harm_example())
    return agent, date_aware_judge, "SIMULATED agent, scripted date-aware judge (offline)"


def documents() -> list[Document]:
    case = redundant_harm_example()
    return [
        Document(page_content=m.content, id=m.id, metadata={"date": DATES[m.id]})
        for m in case.memories
    ]


def rag_chain(retriever: Runnable, llm: BaseChatModel) -> Runnable:
    def notes(docs: list[Document]) -> str:
        return "\n".join(f"- ({d.metadata.get('date', '?')}) {d.page_content}" for d in docs)

    return (
        {"context": retriever | notes, "question": RunnablePassthrough()}
        | PROMPT
        | llm
        | StrOutputParser()
    )


def main() -> dict[str, Any]:
    case = redundant_harm_example()
    agent, judge, label = make_models()
    docs = documents()
    base = RunnableLambda(lambda query: [d.model_copy(deep=True) for d in docs])
    print(f"models: {label}")
    print(f"question: {case.query}   (no reference answer)\n")

    plain = rag_chain(base, agent).invoke(case.query)
    print(f"plain retriever              -> {plain}")

    shadow = ClearingRetriever(retriever=base, llm=agent, judge=judge, mode="shadow")
    seen = shadow.invoke(case.query)
    would = [d.id for d in seen if d.metadata["meclear"]["cleared"]]
    print(f"shadow mode (drops nothing)  -> would clear {would or 'nothing'}")

    clearing = ClearingRetriever(retriever=base, llm=agent, judge=judge)
    cleared = rag_chain(clearing, agent).invoke(case.query)
    print(f"ClearingRetriever            -> {cleared}")
    kept = clearing.invoke(case.query)
    meta = kept[0].metadata["meclear"] if kept else {}
    calls = meta.get("model_calls") or {}
    print(
        f"  kept {[d.id for d in kept]}; model calls: agent {calls.get('agent')}, "
        f"judge {calls.get('judge')}, total {calls.get('total')}"
    )

    coalition = ClearingRetriever(
        retriever=base, llm=agent, judge=judge, documents=Documents(judge_context="coalition")
    )
    abstained = coalition.invoke(case.query)
    status = abstained[0].metadata["meclear"].get("status", "complete")
    reason = abstained[0].metadata["meclear"].get("status_reason")
    print(f"coalition-only judge (opt-in) -> status {status} ({reason}); nothing dropped")
    return {
        "plain": plain,
        "shadow_would_clear": would,
        "cleared": cleared,
        "kept": [d.id for d in kept],
        "model_calls": calls,
        "coalition_status": status,
    }


if __name__ == "__main__":
    main()
