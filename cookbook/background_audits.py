"""Background mode: answer at once, audit later, withhold what the audit proved.

A LangChain app over a vector store, with ``ClearingRetriever(mode="background")``: the
request path never calls a model for clearance. It withholds the memories the harm ledger
verified harmful for this question (or one like it), queues an audit of the query with a
frozen snapshot of what was retrieved, and returns. An audit worker (a thread started with
the component; ``meclear worker`` in production) runs the verified clearance and records
it; the next ask is answered without the stale records. The task agent and the judge are
the SIMULATED evidence world, so this runs offline.

What it shows:

1. twenty users ask the same question at once: no model call on the request path, and all
   twenty join one audit (single flight);
2. the audit runs and records the verified harm under the job id (here on this thread
   after the burst, so the output is the same on every run; with the default
   ``audit_workers=1`` a worker thread started with the component runs it as soon as it is
   queued, and ``meclear worker`` runs it in another process);
3. the same question, and a paraphrase of it, now come back without the two stale records,
   each document saying why (``withheld``: the run that proved it) with no model call;
4. an unrelated question keeps every memory: the harm was proven on another question.

Run: ``python cookbook/background_audits.py`` (a few seconds).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
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
from meclear_integrations.simulation import redundant_harm_example

QUESTION = "Which month was John in Italy?"
PARAPHRASE = "Remind me: which month was John in Italy?"


class RequestCalls(BaseCallbackHandler):
    """Counts the model calls made under the requests it is passed to (not the audits')."""

    def __init__(self) -> None:
        self.calls = 0

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.calls += 1

    def on_llm_start(self, *args: Any, **kwargs: Any) -> None:
        self.calls += 1


def main() -> None:
    """Play the loop once and print what happened."""
    case = redundant_harm_example()
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    store.add_documents(
        [
            Document(page_content=m.content, metadata=dict(m.metadata), id=m.id)
            for m in case.memories
        ]
    )
    counter = RequestCalls()
    with tempfile.TemporaryDirectory() as tmp:
        ledger = HarmLedger(Path(tmp) / "ledger.db")  # the job table goes beside it
        retriever = ClearingRetriever(
            retriever=store.as_retriever(search_kwargs={"k": len(case.memories)}),
            llm=SimulatedChatModel.from_case(case),
            mode="background",
            # audit_workers default 1: a worker thread starts with the component
            loop=Loop(ledger=ledger, audit_workers=0),
        )
        config = {**reference_config(case.reference), "callbacks": [counter]}

        async def twenty_users() -> list[list[Document]]:
            asks = (retriever.ainvoke(QUESTION, config=config) for _ in range(20))
            return await asyncio.gather(*asks)

        started = time.perf_counter()
        answers = asyncio.run(twenty_users())
        answered = time.perf_counter() - started
        tickets = [a[0].metadata["meclear"]["audit"] for a in answers]
        print(
            f"20 answers in {answered:.2f} s, "
            f"{sum(len(a) for a in answers) // 20} documents each, "
            f"{counter.calls} model calls on the request path"
        )
        print(
            f"audits queued: {len({t['job_id'] for t in tickets})} "
            f"({sum(t['joined'] for t in tickets)} requests joined it)"
        )

        [outcome] = retriever.run_audits()  # what the worker thread does
        [run] = ledger.runs()
        assert outcome.state == "done" and run.run_id == tickets[0]["job_id"]
        print(f"audit recorded under its job id: cleared {sorted(run.cleared_ids)}")

        for question in (QUESTION, PARAPHRASE, "Who recommended Florence to John?"):
            kept = retriever.invoke(question, config=config)
            withheld = kept[0].metadata["meclear"]["withheld"]
            why = {w["memory_id"]: w["scope"] for w in withheld}
            print(f"{question!r}: {len(kept)} documents, withheld {why or 'nothing'}")
        print(f"model calls on every request path: {counter.calls}")
        retriever.close()
        ledger.close()


if __name__ == "__main__":
    main()
