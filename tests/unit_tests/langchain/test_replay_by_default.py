"""With the default ledger (texts kept), a feedback replays through the integrations from
its run alone: no ``query=``, no trace, no store reader."""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel
from meclear_integrations.langchain.feedback import replay_feedback
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.simulation import redundant_harm_example

CASE = redundant_harm_example()
FAULTS = {"f1", "f2"}


def test_langchain_replay_from_the_run_alone(tmp_path) -> None:
    docs = [Document(page_content=m.content, id=m.id) for m in CASE.memories]
    with HarmLedger(tmp_path / "l.db") as ledger:
        retriever = ClearingRetriever(
            retriever=RunnableLambda(lambda q: docs),
            llm=SimulatedChatModel.from_case(CASE),
            loop={"ledger": ledger},
        )
        retriever.invoke(CASE.query)  # the fooled reference-free judge: answered wrong
        run = ledger.find_run(ledger.query_id(CASE.query))
        assert run.query_text == CASE.query
        # a reviewer's verdict: its replay settles the harm for the next asker (an end
        # user's would not: ledger/test_feedback_authority.py)
        feedback = ledger.feedback(
            run.run_id, correct=False, correction=CASE.reference, authority="reviewer"
        )
        result = replay_feedback(retriever, ledger, feedback)
        assert set(result.report.cleared_ids) == FAULTS and result.report.recovered
        assert result.run.extra["texts_from"] == "ledger"
        again = retriever.invoke(CASE.query)
        assert {d.id for d in again}.isdisjoint(FAULTS)
