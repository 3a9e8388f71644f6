"""Challenged settlements on the ledger alone (SQLite here, PostgreSQL in the integration tier).

SIMULATED ("Where does Sam work?" with one stale copy, ``tests.support.stale_employer``): an
operator settles the true memory against a stale "correction"; the live reference-free
judge (it sees the full context) rejects the answer without it, so every ask that withholds
it is a challenge. Challenges are counted, collapse to the newest per question, are answered
once (async path here), upheld while the operator's correction still shows the harm and
lifted once the stale copy leaves the store.
"""

from __future__ import annotations

import asyncio
from typing import Any

from meclear_integrations import ClearanceConfig, MeClearEngine
from meclear_integrations.core.memory import Memory
from meclear_integrations.ledger import HarmLedger, replay_pending
from meclear_integrations.ledger.reverify import areverify_settlement, reverify_pending
from tests.support import stale_employer as sam

FAST = ClearanceConfig(failure={"retry": {"initial_backoff": 0.0, "jitter": 0.0}})


def _memories(without: frozenset[str] = frozenset()) -> list[Memory]:
    return [
        Memory(id=i, content=t, metadata={"date": d})
        for i, t, d in sam.memories(1)
        if i not in without
    ]


def _live(memories: list[Memory]) -> Any:
    def evaluate(coalition: Any, trial: int) -> float:  # reference-free, sees the full context
        prompt = "".join(f"<memory>{m.content}</memory>" for m in coalition)
        return sam.verdict(sam.majority_answer(prompt), memories)

    return evaluate


def evaluator_for(query: str, reference: str, memories: list[Any]) -> Any:
    def evaluate(coalition: Any, trial: int) -> float:
        prompt = "".join(f"<memory>{m.content}</memory>" for m in coalition)
        return sam.verdict(sam.majority_answer(prompt), coalition, reference)

    return evaluate


def _ask(ledger: HarmLedger, memories: list[Memory]) -> Any:
    prior = ledger.prior_candidate(memories, query=sam.QUESTION)
    report = MeClearEngine(FAST).clear(memories, _live(memories), prior_harmful=prior)
    ledger.record(report, query=sam.QUESTION, context=memories)
    return report


def test_challenges_are_counted_collapsed_upheld_then_lifted(ledger_url: str) -> None:
    with HarmLedger(ledger_url) as ledger:
        memories = _memories()
        assert _ask(ledger, memories).recovered  # right, nothing withheld
        right = ledger.runs()[0]
        ledger.feedback(
            right.run_id, correct=False, correction="OldCo", memory_ids=["t1"],
            authority="operator", source_id="ops",
        )  # fmt: skip
        replay_pending(ledger, evaluator_for=evaluator_for)
        assert ledger.prior_candidate(memories, query=sam.QUESTION).settled == ("t1",)

        first, second = _ask(ledger, memories), _ask(ledger, memories)
        for report in (first, second):  # the trusted settlement holds, unconfirmed
            assert report.cleared_ids == ["t1"] and not report.recovered
            assert report.clearance_search == "prior"
        counts = ledger.stats()["settlements"]
        assert counts["unconfirmed_runs"] == 2 and counts["pending"] == 1  # newest per question

        challenge = ledger.runs()[0]
        result = asyncio.run(
            areverify_settlement(ledger, challenge.run_id, evaluator_for=evaluator_for)
        )
        assert result.upheld == ["t1"] and not result.lifted and len(result.runs) == 1
        assert result.runs[0].origin == "reverify" and result.runs[0].replay_of == challenge.run_id
        full = MeClearEngine(FAST).clear(memories, evaluator_for("", "OldCo", memories))
        assert result.runs[0].evaluator_calls * 3 < full.cost.evaluator_calls  # one candidate
        assert ledger.stats()["settlements"]["pending"] == 0
        assert reverify_pending(ledger, evaluator_for=evaluator_for) == []  # answered once

        fewer = _memories(frozenset({"s1"}))  # the stale copy retired from the store
        assert _ask(ledger, fewer).cleared_ids == ["t1"]  # withheld until re-verified
        [lifted] = reverify_pending(ledger, evaluator_for=evaluator_for)
        assert not isinstance(lifted, Exception)
        assert lifted.lifted == ["t1"] and not lifted.upheld
        assert "t1" not in ledger.prior_candidate(fewer, query=sam.QUESTION).ids
        assert "t1" in _ask(ledger, fewer).kept_ids  # served again
        events = [e.event for e in ledger.history("t1").events]
        assert events.index("upheld") < events.index("lifted")  # audited, in order
        assert not ledger.history("t1").restored  # one question's settlement, not a restore
        counts = ledger.stats()["settlements"]
        assert counts["upheld"] == 1 and counts["lifted"] >= 1 and counts["pending"] == 0
        assert ledger.stats()["restores"] == 0  # a lift is not a memory-wide restore


def test_the_cli_replay_pass_re_verifies_challenges(ledger_url: str, capsys: Any) -> None:
    """``meclear ledger replay`` without feedback ids ends with the challenges' verdicts."""
    from meclear_integrations.cli.ledger import _reverify

    with HarmLedger(ledger_url) as ledger:
        memories = _memories()
        _ask(ledger, memories)
        ledger.feedback(
            ledger.runs()[0].run_id, correct=False, correction="OldCo", memory_ids=["t1"],
            authority="reviewer", source_id="ana",
        )  # fmt: skip
        replay_pending(ledger, evaluator_for=evaluator_for)
        assert not _ask(ledger, memories).recovered  # the challenge
        challenge = ledger.runs()[0]
        assert _reverify(ledger, evaluator_for, None) == 0
        out = capsys.readouterr().out
        assert f"challenge {challenge.run_id[:8]}: upheld t1; lifted nothing" in out
        assert _reverify(ledger, evaluator_for, None) == 0
        assert capsys.readouterr().out == ""  # answered once
