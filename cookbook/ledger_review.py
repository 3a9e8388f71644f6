"""Review the harm ledger, approve its proposals, and act on them in a LangChain vector store.

meclear never deletes a memory. It records every clearance in a harm ledger and proposes
memories that verified clearances removed for several distinct queries; a person decides.
This script plays the whole loop offline (the task agent and judge are the SIMULATED
evidence world):

1. four users ask about John's trip through ``ClearingRetriever`` with a ledger: the
   first question pays a full clearance; its rewordings ("Remind me: ...") are questions
   like it, so they are ledger-guided (the baseline and one verified candidate); a second,
   differently worded question ("When did John travel to Italy?") is not in the first
   one's scope and pays its own full clearance;
2. ``ledger.review(min_queries=2)`` proposes the two stale records, harmful for two
   distinct questions (a ledger-guided rewording repeats a harm, it is not a new question);
3. a person approves each proposal (interactively when run in a terminal, otherwise every
   proposal whose text is unchanged is approved and the script says so);
4. the approved memories are deleted from the ``InMemoryVectorStore`` by *your* code, after
   checking that the stored text still has the content hash the evidence is about;
5. the plain retriever now answers correctly without any clearance.

Run: ``python cookbook/ledger_review.py``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from meclear_integrations.langchain import (
    ClearingRetriever,
    Loop,
    SimulatedChatModel,
    reference_config,
)
from meclear_integrations.ledger import HarmLedger, content_hash
from meclear_integrations.simulation import redundant_harm_example
from meclear_integrations.triggers import WhenJudgeFails

QUESTIONS = [
    "Which month was John in Italy?",
    "Remind me: which month was John in Italy?",
    "When did John travel to Italy?",
    "Which month was John in Italy? Do you remember?",
]


def approve(proposal, text: str) -> bool:
    """A person's decision: asked in a terminal, else approved when the text is unchanged."""
    if sys.stdin.isatty():
        answer = input(f"delete {proposal.memory_id!r} ({text!r})? [y/N] ")
        return answer.strip().lower() == "y"
    return content_hash(text) == proposal.content_hash


def main() -> dict[str, object]:
    case = redundant_harm_example()
    llm = SimulatedChatModel.from_case(case)
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents([Document(page_content=m.content, id=m.id) for m in case.memories])
    base = store.as_retriever(search_kwargs={"k": len(case.memories)})
    config = reference_config(case.reference)
    with (
        tempfile.TemporaryDirectory(prefix="meclear-ledger-") as folder,  # removed afterwards
        HarmLedger(Path(folder) / "ledger.db") as ledger,
    ):
        retriever = ClearingRetriever(
            retriever=base, llm=llm, loop=Loop(trigger=WhenJudgeFails(), ledger=ledger)
        )
        print("SIMULATED evidence world (offline)\n")
        for question in QUESTIONS:
            kept = retriever.invoke(question, config=config)
            run = ledger.runs(limit=1)[0]
            print(
                f"{question!r}: {run.mode}, {run.evaluator_calls} evaluator calls, "
                f"kept {sorted(d.id for d in kept)}"
            )

        proposals = ledger.review(min_queries=2)
        print("\nproposals (meclear ledger review --min-queries 2):")
        for p in proposals:
            print(
                f"  {p.rank}. {p.memory_id}: harmful for {p.harmful_queries} distinct "
                f"queries, bound {p.lower_bound:.2f}"
            )
        if not sys.stdin.isatty():
            print("(not a terminal: approving every proposal whose stored text is unchanged)")
        stored = {d.id: d.page_content for d in store.get_by_ids([p.memory_id for p in proposals])}
        approved = [p.memory_id for p in proposals if approve(p, stored[p.memory_id])]
        store.delete(ids=approved)  # your decision, your store: meclear never deletes
        print(f"deleted from the vector store: {approved}")

    plain = base.invoke(QUESTIONS[0])
    answer = llm.invoke(
        "Answer from the notes.\n"
        + "\n".join(f"- {d.page_content}" for d in plain)
        + f"\nQuestion: {QUESTIONS[0]}"
    ).content
    print(f"\nplain retriever after the review: {sorted(d.id for d in plain)} -> {answer}")
    return {"approved": approved, "answer": answer}


if __name__ == "__main__":
    main()
