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
from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.langchain import ClearingRetriever
from meclear_integrations.ledger import HarmLedger, ReplayError, content_hash, replay_pending
from meclear_integrations.ledger import schema as tables
from meclear_integrations.ledger.reverify import (
    ReverifyResult,
    reinstate_settlement,
    reverify_pending,
    reverify_settlement,
)
from meclear_integrations.llama_index import MeClearPostprocessor
from tests.support import stale_employer as sam

FAST = ClearanceConfig(failure={"retry": {"initial_backoff": 0.0, "jitter": 0.0}})
PARAPHRASE = "Remind me, where does Sam work?"
COPIES = 1
"""One stale copy beside the current fact: the full context answers right (the tie goes to
the current fact), so the run the end user calls wrong is a right one, and the replay
against the stale "correction" clears ``t1`` (the issue's scenario)."""


def _langchain(
    counter: sam.Counter, loop: dict[str, Any], mode: str, retired: set[str] | None = None
) -> Any:
    docs = sam.documents(COPIES)
    gone = retired if retired is not None else set()
    component = ClearingRetriever(
        retriever=RunnableLambda(
            lambda q: [d.model_copy(deep=True) for d in docs if d.id not in gone]
        ),
        llm=counter.langchain_llm(),
        judge=counter.judge,
        clearance=FAST,
        mode=mode,
        loop=loop,
    )

    def ask(question: str) -> list[tuple[str, str]]:
        return [(str(d.id), d.page_content) for d in component.invoke(question)]

    return component, ask


def _llama_index(
    counter: sam.Counter, loop: dict[str, Any], mode: str, retired: set[str] | None = None
) -> Any:
    component = MeClearPostprocessor(
        llm=counter.llama_llm(), judge=counter.judge, clearance=FAST, mode=mode, loop=loop
    )
    gone = retired if retired is not None else set()

    def ask(question: str) -> list[tuple[str, str]]:
        nodes = [n for n in sam.nodes(COPIES) if n.node.node_id not in gone]
        out = component.clear_nodes(nodes, question).nodes
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

    return [Memory(id=i, content=t, metadata={"date": d}) for i, t, d in sam.memories(COPIES)]


def _loop(ledger: HarmLedger, mode: str) -> dict[str, Any]:
    loop: dict[str, Any] = {"ledger": ledger}
    if mode == "background":
        loop.update(audit_workers=0, audit_backoff_seconds=0.0, audits_per_question_per_day=9)
    return loop


@pytest.mark.parametrize("mode", ["clear", "background"])
@pytest.mark.parametrize("framework", list(BUILD))
def test_a_trusted_settlement_holds_and_a_wrong_one_is_lifted_once_its_evidence_fails(
    tmp_path: Path, framework: str, mode: str
) -> None:
    """An operator settles the wrong memory: it holds (the live judge cannot overturn a
    trusted verdict; counted and re-verified against the operator's own correction, which it
    passes), until the store changes so that the correction no longer shows it: the
    re-verification then lifts it (audited, reversible by a reviewer) and ``t1`` is served."""
    counter = sam.Counter()
    retired: set[str] = set()
    with HarmLedger(tmp_path / "ledger.db") as ledger:
        component, ask = BUILD[framework](counter, _loop(ledger, mode), mode, retired)

        def asked(question: str = sam.QUESTION) -> set[str]:
            shown = ask(question)
            if mode == "background":
                component.run_audits()
            return {mid for mid, _ in shown}

        assert "t1" in asked()
        right = ledger.runs()[0]
        ledger.feedback(
            right.run_id,
            correct=False,
            correction="OldCo",
            memory_ids=["t1"],
            authority="operator",
            source_id="ops",
        )
        [replayed] = replay_pending(ledger, evaluator_for=evaluator_for)
        assert "t1" in replayed.report.cleared_ids

        # the trusted verdict holds against the live judge (which rejects "OldCo"), counted
        assert "t1" not in asked() and "t1" not in asked(PARAPHRASE)
        if mode == "background":
            assert "t1" not in asked()  # the audits ran: the challenge is recorded
        stats = ledger.stats()["settlements"]
        assert stats["unconfirmed_runs"] >= 1
        challenge = next(r for r in ledger.runs() if r.origin != "reverify")
        assert challenge.clearance_search == "prior" and not challenge.recovered

        # re-verified against the operator's correction, it stands: by the routine replay
        # inline, by the audit worker in background mode (``jobs.reverify``)
        if mode == "background":
            assert stats["pending"] == 0 and stats["upheld"] >= 1
        else:
            assert stats["pending"] >= 1
            routine = [r for r in replay_pending(ledger, evaluator_for=evaluator_for)]
            verdicts = [r for r in routine if isinstance(r, ReverifyResult)]
            assert verdicts and all(r.upheld == ["t1"] and not r.lifted for r in verdicts)
        assert ledger.stats()["settlements"]["pending"] == 0
        assert "t1" not in asked()

        # the stale copy leaves the store: the operator's correction no longer shows t1's harm
        retired.add("s1")
        assert "t1" not in asked()  # still withheld until re-verified (challenged again)
        if mode != "background":
            [lifted] = [
                r
                for r in replay_pending(ledger, evaluator_for=evaluator_for)
                if isinstance(r, ReverifyResult)
            ]
            assert lifted.lifted == ["t1"] and not lifted.upheld
        event = ledger.history("t1").events[-1]
        evidence = ledger.find_run(event.run_id)
        assert evidence.origin == "reverify" and evidence.replay_of is not None
        assert event.event == "lifted" and event.actor == "meclear:reverify"
        assert "OldCo" not in (event.reason or "")
        assert ledger.stats()["settlements"]["lifted"] >= 1  # one event per question lifted
        assert "t1" in asked() and "t1" in asked(PARAPHRASE)  # served again

        # a reviewer may reverse the lift (audited); an end user may not
        content = next(t for i, t, _ in sam.memories(COPIES) if i == "t1")
        with pytest.raises(ConfigurationError, match="only a reviewer or an operator"):
            reinstate_settlement(
                ledger, "t1", query=sam.QUESTION, content_hash=content_hash(content),
                actor="u1", reason="I disagree", authority="end_user",
            )  # fmt: skip
        reinstate_settlement(
            ledger, "t1", query=sam.QUESTION, content_hash=content_hash(content),
            actor="ana", reason="checked the HR record",
        )  # fmt: skip
        assert ledger.history("t1").events[-1].actor == "reviewer:ana"
        assert "t1" not in asked()
        component.close()


def test_a_challenge_of_an_end_users_settlement_is_lifted_without_a_model_call(
    tmp_path: Path,
) -> None:
    """A challenge recorded by an earlier version (the settled-only candidate admitted on an
    end user's correction): re-verification lifts it at once, no model call."""
    from meclear_integrations import MeClearEngine
    from meclear_integrations.core.prior import PriorCandidate

    counter = sam.Counter()
    with HarmLedger(tmp_path / "ledger.db") as ledger:
        component, ask = BUILD["langchain"](counter, _loop(ledger, "clear"), "clear")
        ask(sam.QUESTION)
        right = ledger.runs()[0]
        ledger.feedback(right.run_id, correct=False, correction="OldCo", memory_ids=["t1"])
        replay_pending(ledger, evaluator_for=evaluator_for)
        settle_as_before_v6(ledger, "t1")
        memories = _memories()

        def live(coalition: Any, trial: int) -> float:  # reference-free, sees the full context
            prompt = "".join(f"<memory>{m.content}</memory>" for m in coalition)
            return sam.verdict(sam.majority_answer(prompt), memories)

        prior = PriorCandidate(ids=("t1",), settled=("t1",), scoped=True)
        report = MeClearEngine(FAST).clear(memories, live, prior_harmful=prior)
        assert report.clearance_search == "prior" and not report.recovered  # the old admission
        ledger.record(report, query=sam.QUESTION, context=memories)
        before = counter.calls
        [result] = reverify_pending(ledger, evaluator_for=evaluator_for)
        assert isinstance(result, ReverifyResult)
        assert result.lifted == ["t1"] and result.runs == [] and counter.calls == before
        assert "end user's correction alone" in result.reasons["t1"]
        assert reverify_pending(ledger, evaluator_for=evaluator_for) == []  # answered once
        with pytest.raises(ReplayError, match="not a challenge"):
            reverify_settlement(ledger, right.run_id, evaluator_for=evaluator_for)
        component.close()
