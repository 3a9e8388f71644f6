"""Issue 24 item 4 in LlamaIndex: negative feedback fixes the next ask through a query engine.

SIMULATED (``SimulatedLLM``, a llama-index-core ``CustomLLM`` playing the redundant-harm
case). The live judge is reference-free and fooled: it accepts the stale answer on the full
context, so clearance exits early and the query engine answers "January 2023". The user
says it was wrong; the feedback is replayed against the correction through the
postprocessor's own agent and judge (the question from the trace: the ledger keeps no
texts; the nodes read back from the docstore), which verifies the stale nodes harmful for
this question. The next ask of the same question, and of a paraphrase, tries that known
harm before the early exit and answers "December 2023"; an unrelated question keeps them.
"""

from __future__ import annotations

import pytest
from llama_index.core.query_engine import RetrieverQueryEngine

from meclear_integrations.ledger import HarmLedger, ReplayError
from meclear_integrations.llama_index import MeClearPostprocessor
from meclear_integrations.llama_index.feedback import replay_feedback, reverify_settlements
from meclear_integrations.triggers import OnKnownHarm, OnNegativeFeedback, WhenJudgeFails

FAULTS = {"f1", "f2"}


def source_ids(response) -> set[str]:
    return {n.node.node_id for n in response.source_nodes}


@pytest.mark.parametrize("trigger", ["judge_first", "known_harm_or_feedback"])
def test_negative_feedback_fixes_the_next_ask(tmp_path, case, index, llm, trigger) -> None:
    """Under both recommended triggers (README "Running it in production")."""
    with HarmLedger(tmp_path / "l.db", store_text=False) as ledger:  # no question texts
        policy = (
            WhenJudgeFails()
            if trigger == "judge_first"
            else OnKnownHarm(ledger) | OnNegativeFeedback(ledger)
        )
        postprocessor = MeClearPostprocessor(llm=llm, loop={"trigger": policy, "ledger": ledger})
        engine = RetrieverQueryEngine.from_args(
            index.as_retriever(similarity_top_k=6), llm=llm, node_postprocessors=[postprocessor]
        )
        first = engine.query(case.query)  # no reference: the fooled judge decides
        assert str(first) == "January 2023"  # answered wrong
        assert source_ids(first) >= FAULTS
        run = ledger.find_run(ledger.query_id(case.query))
        assert run.query_text is None
        # a reviewer's verdict: the fooled live judge cannot confirm the fix, so only a
        # trusted correction settles it for the next askers (an end user's would not)
        feedback = ledger.feedback(
            run.run_id, correct=False, correction=case.reference, authority="reviewer"
        )

        get_nodes = index.docstore.get_nodes
        with pytest.raises(ReplayError, match="no query text"):
            replay_feedback(postprocessor, ledger, feedback, get_nodes=get_nodes)
        asked: list[str] = []

        def trace_query(original) -> str:
            asked.append(original.run_id)
            return case.query

        result = replay_feedback(
            postprocessor, ledger, feedback, get_nodes=get_nodes, trace_query=trace_query
        )
        assert asked == [run.run_id]
        assert set(result.report.cleared_ids) == FAULTS and result.report.recovered
        assert result.run.success_signal == "feedback"

        again = engine.query(case.query)  # the next ask: no reference, same fooled judge
        assert str(again) == "December 2023"
        assert source_ids(again).isdisjoint(FAULTS)
        meta = again.source_nodes[0].node.metadata["meclear"]
        assert meta["ledger_guided"] and meta["cleared"] is False
        assert ledger.find_run(meta["ledger_run_id"]).mode == "ledger_guided"
        # the trusted settlement holds, but says the live judge did not confirm it, and counts
        assert meta["recovered"] is False
        assert ledger.find_run(meta["ledger_run_id"]).clearance_search == "prior"
        assert ledger.stats()["settlements"]["unconfirmed_runs"] >= 1

        paraphrase = engine.query("Remind me, " + case.query[0].lower() + case.query[1:])
        assert str(paraphrase) == "December 2023"
        assert source_ids(paraphrase).isdisjoint(FAULTS)
        assert ledger.scoped_harm("What colour is the office door?", case.memories) == []
        # the challenges are re-verified against the reviewer's own correction: they stand
        asked_texts = (case.query, "Remind me, " + case.query[0].lower() + case.query[1:])
        verdicts = reverify_settlements(
            postprocessor, ledger, get_nodes=get_nodes,
            trace_query=lambda r: next(
                q for q in asked_texts if ledger.query_id(q) == r.query_id
            ),
        )  # fmt: skip
        assert verdicts and all(set(v.upheld) == FAULTS and not v.lifted for v in verdicts)
        assert str(engine.query(case.query)) == "December 2023"
        # review proposes the stale notes only, never a true one the question needs
        proposed = {p.memory_id for p in ledger.review(min_queries=1)}
        assert proposed == FAULTS


def test_a_replay_refuses_nodes_whose_text_changed(tmp_path, case, index, llm) -> None:
    """The docstore's nodes are checked against the recorded content hashes."""
    with HarmLedger(tmp_path / "l.db") as ledger:
        postprocessor = MeClearPostprocessor(
            llm=llm, loop={"trigger": WhenJudgeFails(), "ledger": ledger}
        )
        engine = RetrieverQueryEngine.from_args(
            index.as_retriever(similarity_top_k=6), llm=llm, node_postprocessors=[postprocessor]
        )
        engine.query(case.query)
        run = ledger.find_run(ledger.query_id(case.query))
        # a reviewer's verdict: the fooled live judge cannot confirm the fix, so only a
        # trusted correction settles it for the next askers (an end user's would not)
        feedback = ledger.feedback(
            run.run_id, correct=False, correction=case.reference, authority="reviewer"
        )

        def edited(ids: list[str]):
            found = index.docstore.get_nodes(ids)
            return [n.model_copy(update={"text": n.get_content() + " (edited)"}) for n in found]

        with pytest.raises(ReplayError, match="hash"):
            replay_feedback(postprocessor, ledger, feedback, get_nodes=edited, query=case.query)
