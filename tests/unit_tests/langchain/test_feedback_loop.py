"""Issue 24 item 4: a question with verified negative feedback answers right on its next ask.

The live judge is reference-free and fooled: it sees the full context and accepts the
stale answer, so clearance exits early. The user says the answer was wrong; the feedback is
replayed against the correction (the question read from the trace: the ledger keeps no
texts), which verifies the stale records harmful for this question. The next ask of the same
question, and of a paraphrase, tries that known harm before the early exit and answers
right; an unrelated question keeps the records.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel
from meclear_integrations.langchain.feedback import replay_feedback, reverify_settlements
from meclear_integrations.ledger import HarmLedger, ReplayError
from meclear_integrations.simulation import redundant_harm_example
from meclear_integrations.triggers import OnKnownHarm, OnNegativeFeedback, WhenJudgeFails

CASE = redundant_harm_example()
DOCS = [Document(page_content=m.content, id=m.id) for m in CASE.memories]
STORE = {d.id: d for d in DOCS}
FAULTS = {"f1", "f2"}


class TraceClient:
    """A LangSmith client stand-in: ``read_run`` returns the traced run's inputs."""

    def __init__(self) -> None:
        self.inputs: dict[str, dict[str, str]] = {}

    def read_run(self, run_id: str) -> SimpleNamespace:
        return SimpleNamespace(inputs=self.inputs.get(str(run_id), {}))


def get_documents(ids):
    return [STORE[i] for i in ids if i in STORE]


@pytest.mark.parametrize("trigger", ["judge_first", "known_harm_or_feedback"])
def test_negative_feedback_fixes_the_next_ask(tmp_path, trigger) -> None:
    """Under both recommended triggers (README "Running it in production")."""
    with HarmLedger(tmp_path / "l.db", store_text=False) as ledger:  # no question texts
        policy = (
            WhenJudgeFails()
            if trigger == "judge_first"
            else OnKnownHarm(ledger) | OnNegativeFeedback(ledger)
        )
        retriever = ClearingRetriever(
            retriever=RunnableLambda(lambda q: DOCS),
            llm=SimulatedChatModel.from_case(CASE),
            loop={"trigger": policy, "ledger": ledger},
        )
        first = retriever.invoke(CASE.query)  # no reference: the fooled judge decides
        assert {d.id for d in first} >= FAULTS  # answered wrong
        run = ledger.find_run(ledger.query_id(CASE.query))
        assert run.query_text is None
        # a reviewer's verdict: the fooled live judge cannot confirm the fix, so only a
        # trusted correction settles it for the next askers (an end user's would not)
        feedback = ledger.feedback(
            run.run_id, correct=False, correction=CASE.reference, authority="reviewer"
        )

        with pytest.raises(ReplayError, match="no query text"):
            replay_feedback(retriever, ledger, feedback, get_documents=get_documents)
        client = TraceClient()
        if run.trace_run_id:
            client.inputs[run.trace_run_id] = {"query": CASE.query}
        result = replay_feedback(
            retriever, ledger, feedback, get_documents=get_documents, client=client
        )
        assert set(result.report.cleared_ids) == FAULTS and result.report.recovered
        assert result.run.success_signal == "feedback"

        again = retriever.invoke(CASE.query)  # the next ask: no reference, same fooled judge
        assert {d.id for d in again}.isdisjoint(FAULTS)
        meta = again[0].metadata["meclear"]
        assert meta["ledger_guided"] and meta["cleared"] is False
        assert ledger.find_run(meta["ledger_run_id"]).mode == "ledger_guided"
        # the trusted settlement holds, but says the live judge did not confirm it, and counts
        assert meta["recovered"] is False
        assert ledger.find_run(meta["ledger_run_id"]).clearance_search == "prior"
        assert ledger.stats()["settlements"]["unconfirmed_runs"] >= 1
        paraphrase = retriever.invoke("Remind me, " + CASE.query[0].lower() + CASE.query[1:])
        assert {d.id for d in paraphrase}.isdisjoint(FAULTS)
        unrelated = ledger.scoped_harm("What colour is the office door?", CASE.memories)
        assert unrelated == []  # scoped: another question keeps them

        # the challenges are re-verified against the reviewer's own correction: they stand
        asked = (CASE.query, "Remind me, " + CASE.query[0].lower() + CASE.query[1:])
        verdicts = reverify_settlements(
            retriever, ledger, get_documents=get_documents,
            trace_query=lambda r: next(q for q in asked if ledger.query_id(q) == r.query_id),
        )  # fmt: skip
        assert verdicts and all(set(v.upheld) == FAULTS and not v.lifted for v in verdicts)
        assert {d.id for d in retriever.invoke(CASE.query)}.isdisjoint(FAULTS)


def test_the_question_comes_from_the_trace_or_a_clear_error(tmp_path) -> None:
    with HarmLedger(tmp_path / "l.db", store_text=False) as ledger:  # the privacy switch
        retriever = ClearingRetriever(
            retriever=RunnableLambda(lambda q: DOCS), llm=SimulatedChatModel.from_case(CASE)
        )
        from meclear_integrations import ClearanceConfig, MeClearEngine

        report = MeClearEngine(ClearanceConfig()).clear(CASE.memories, lambda c, t: 1.0)
        run = ledger.record(report, query=CASE.query, context=CASE.memories, trace_run_id="t-1")
        fb = ledger.feedback(run.run_id, correct=False, correction=CASE.reference)
        with pytest.raises(ReplayError, match=r"its trace .* gave none"):
            replay_feedback(
                retriever, ledger, fb, get_documents=get_documents, client=TraceClient()
            )
        with pytest.raises(ReplayError, match="does not hash"):
            replay_feedback(
                retriever, ledger, fb, get_documents=get_documents,
                trace_query=lambda r: "another question",
            )  # fmt: skip
        client = TraceClient()
        client.inputs["t-1"] = {"question": CASE.query, "chat_history": "..."}
        result = replay_feedback(retriever, ledger, fb, get_documents=get_documents, client=client)
        assert set(result.report.cleared_ids) == FAULTS
