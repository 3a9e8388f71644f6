"""Review the harm ledger, accept its proposals, and retire them from a LangChain vector store.

meclear records every clearance in a harm ledger and proposes memories that verified
clearances removed for several distinct queries; a person decides, and an accepted review
is written back to the store as a soft delete. This script plays the whole loop offline
(the task agent and judge are the SIMULATED evidence world):

1. four users ask about John's trip through ``ClearingRetriever`` with a ledger: the
   first question pays a full clearance; its rewordings ("Remind me: ...") are questions
   like it, so they are ledger-guided (the baseline and one verified candidate); a second,
   differently worded question ("When did John travel to Italy?") is not in the first
   one's scope and pays its own full clearance;
2. ``ledger.review(min_queries=2)`` proposes the two stale records, harmful for two
   distinct questions (a ledger-guided rewording repeats a harm, it is not a new question);
3. a person accepts each proposal (interactively when run in a terminal, otherwise every
   proposal is accepted and the script says so): ``accept_review``, as ``meclear ledger
   accept``;
4. ``apply_reviews`` (``meclear ledger apply``) retires them from the
   ``InMemoryVectorStore``: a dry run first, then each memory is kept whole in a tombstone
   in the ledger (who, when, why, the evidence runs) and removed from the store, after
   checking the stored text still has the content hash the evidence is about; applying
   again changes nothing;
5. the plain retriever now answers correctly without any clearance; ``restore_memory``
   (``meclear ledger restore ID --store ...``) would put a memory back byte for byte.

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
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.ledger.tombstones import tombstone_events
from meclear_integrations.simulation import redundant_harm_example
from meclear_integrations.triggers import WhenJudgeFails
from meclear_integrations.writeback import accept_review, apply_reviews, restore_memory

QUESTIONS = [
    "Which month was John in Italy?",
    "Remind me: which month was John in Italy?",
    "When did John travel to Italy?",
    "Which month was John in Italy? Do you remember?",
]


def approve(proposal) -> bool:
    """A person's decision: asked in a terminal, else accepted (apply checks the hash)."""
    if sys.stdin.isatty():
        answer = input(f"retire {proposal.memory_id!r}? [y/N] ")
        return answer.strip().lower() == "y"
    return True


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
            print("(not a terminal: accepting every proposal)")
        approved = [p.memory_id for p in proposals if approve(p)]
        for memory_id in approved:
            accept_review(ledger, memory_id, actor="reviewer", reason="stale travel date")
        print("\nmeclear ledger apply --dry-run:")
        for outcome in apply_reviews(ledger, store, dry_run=True):
            print(f"  {outcome.message}")
        retired = [o.memory_id for o in apply_reviews(ledger, store, actor="ops") if o.changed]
        print(f"retired from the vector store (tombstones kept): {retired}")
        again = apply_reviews(ledger, store, retired, actor="ops")
        print(f"applied again: {[o.action for o in again]}")
        trail = [(e.event, e.memory_id, e.actor, len(e.run_ids)) for e in tombstone_events(ledger)]
        print(f"audit trail (event, memory, who, evidence runs): {trail}")

        plain = base.invoke(QUESTIONS[0])
        answer = llm.invoke(
            "Answer from the notes.\n"
            + "\n".join(f"- {d.page_content}" for d in plain)
            + f"\nQuestion: {QUESTIONS[0]}"
        ).content
        print(f"\nplain retriever after the review: {sorted(d.id for d in plain)} -> {answer}")
        if retired:  # reversible: put one back, byte for byte, under its id
            back = restore_memory(ledger, store, retired[0], actor="ops", reason="demo undo")
            print(f"restore: {back.message}")
    return {"approved": approved, "retired": retired, "answer": answer}


if __name__ == "__main__":
    main()
