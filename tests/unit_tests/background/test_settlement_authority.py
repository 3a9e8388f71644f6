"""Issue 38 item 5: one untrusted thumbs-down never settles a harm for everyone.

SIMULATED ("Where does Sam work?", ``tests.support.stale_employer``; the live judge is
reference-free and sees the full context, so it rejects "OldCo" whenever the current fact
``t1`` is retrieved). The question is answered right; one end user then says the right answer
was wrong, gives the stale value as the "correction" and names the true memory; the routine
replay runs. Both with the ledger as this version writes it and with the row settled the way
a ledger written before schema version 6 kept it (an end user's replay settled its harm),
every later asker and a paraphrase get "NewCo" with ``t1`` served, in both frameworks,
inline and in background mode; the routine replay's re-verification leaves no settlement
resting on that correction.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda
from sqlalchemy import update

from meclear_integrations import ClearanceConfig
from meclear_integrations.langchain import ClearingRetriever
from meclear_integrations.ledger import HarmLedger, ReverifyResult, replay_pending
from meclear_integrations.ledger import schema as tables
from meclear_integrations.llama_index import MeClearPostprocessor
from tests.support import stale_employer as sam

FAST = ClearanceConfig(failure={"retry": {"initial_backoff": 0.0, "jitter": 0.0}})
PARAPHRASE = "Remind me, where does Sam work?"
COPIES = 1
"""One stale copy beside the current fact: the full context answers right (the tie goes to
the current fact), so the run the end user calls wrong is a right one, and the replay
against the stale "correction" clears ``t1`` (the issue's scenario)."""


def _langchain(counter: sam.Counter, loop: dict[str, Any], mode: str) -> Any:
    docs = sam.documents(COPIES)
    component = ClearingRetriever(
        retriever=RunnableLambda(lambda q: [d.model_copy(deep=True) for d in docs]),
        llm=counter.langchain_llm(),
        judge=counter.judge,
        clearance=FAST,
        mode=mode,
        loop=loop,
    )

    def ask(question: str) -> list[tuple[str, str]]:
        return [(str(d.id), d.page_content) for d in component.invoke(question)]

    return component, ask


def _llama_index(counter: sam.Counter, loop: dict[str, Any], mode: str) -> Any:
    component = MeClearPostprocessor(
        llm=counter.llama_llm(), judge=counter.judge, clearance=FAST, mode=mode, loop=loop
    )

    def ask(question: str) -> list[tuple[str, str]]:
        out = component.clear_nodes(sam.nodes(COPIES), question).nodes
        return [(n.node.node_id, n.node.get_content()) for n in out]

    return component, ask


BUILD = {"langchain": _langchain, "llama_index": _llama_index}


def _answer(served: list[tuple[str, str]]) -> str:
    return sam.majority_answer("".join(f"<memory>{text}</memory>" for _, text in served))


def evaluator_for(query: str, reference: str, memories: list[Any]) -> Any:
    """The replay's evaluator: the scripted agent judged against the correction."""

    def evaluate(coalition: Any, trial: int) -> float:
        prompt = "".join(f"<memory>{m.content}</memory>" for m in coalition)
        return sam.verdict(sam.majority_answer(prompt), coalition, reference)

    return evaluate


def settle_as_before_v6(ledger: HarmLedger, memory_id: str) -> None:
    """Mark ``memory_id``'s cleared rows settled, as a pre-v6 end user's replay left them."""
    s = tables.memory_scopes
    with ledger.engine.begin() as conn:
        conn.execute(
            update(s)
            .where(s.c.memory_id == memory_id, s.c.cleared_at.is_not(None))
            .values(settled=True, settled_at=s.c.cleared_at)
        )


@pytest.mark.parametrize("ledger_kind", ["current", "before_v6"])
@pytest.mark.parametrize("mode", ["clear", "background"])
@pytest.mark.parametrize("framework", list(BUILD))
def test_one_untrusted_stale_thumbs_down_changes_no_other_users_answer(
    tmp_path: Path, framework: str, mode: str, ledger_kind: str
) -> None:
    counter = sam.Counter()
    with HarmLedger(tmp_path / "ledger.db") as ledger:
        loop: dict[str, Any] = {"ledger": ledger}
        if mode == "background":
            loop.update(audit_workers=0, audit_backoff_seconds=0.0, audits_per_question_per_day=9)
        component, ask = BUILD[framework](counter, loop, mode)

        def asked(question: str) -> list[tuple[str, str]]:
            shown = ask(question)
            if mode == "background":
                component.run_audits()
            return shown

        assert _answer(asked(sam.QUESTION)) == sam.REFERENCE  # answered right
        right = next(r for r in ledger.runs() if r.recovered and r.status == "complete")

        # the hostile verdict: a right run called wrong, the stale value as the correction
        ledger.feedback(right.run_id, correct=False, correction="OldCo", memory_ids=["t1"])
        [replayed] = replay_pending(ledger, evaluator_for=evaluator_for)
        assert not isinstance(replayed, Exception)
        assert replayed.report.recovered and "t1" in replayed.report.cleared_ids
        if ledger_kind == "before_v6":
            settle_as_before_v6(ledger, "t1")

        for question in (sam.QUESTION, PARAPHRASE, sam.QUESTION):
            served = asked(question)
            assert _answer(served) == sam.REFERENCE, (question, served)
            assert "t1" in {mid for mid, _ in served}

        routine = replay_pending(ledger, evaluator_for=evaluator_for)  # the next routine pass
        assert not any(isinstance(r, Exception) for r in routine)
        assert not any(
            isinstance(r, ReverifyResult) and "t1" in r.upheld for r in routine
        )  # nothing stands on the end user's correction
        assert (
            "t1" not in ledger.prior_candidate([m for m in _memories()], query=sam.QUESTION).settled
        )
        served = asked(sam.QUESTION)
        assert _answer(served) == sam.REFERENCE and "t1" in {mid for mid, _ in served}
        component.close()


def _memories() -> list[Any]:
    from meclear_integrations.core.memory import Memory

    return [Memory(id=i, content=t) for i, t, _ in sam.memories(COPIES)]
