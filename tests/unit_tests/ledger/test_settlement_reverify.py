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
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import event

from meclear_integrations import ClearanceConfig, MeClearEngine
from meclear_integrations.core.memory import Memory
from meclear_integrations.ledger import HarmLedger, replay_pending
from meclear_integrations.ledger.replay_context import ReplayError
from meclear_integrations.ledger.reverify import (
    areverify_settlement,
    reverify_pending,
    reverify_settlement,
)
from meclear_integrations.ledger.settlement import REVERIFY_QUIET_SECONDS, pending_challenges
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


class _Clock:
    """A settable UTC clock for the ledger (the quiet period is judged by it)."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def _counting(calls: list[str]) -> Any:
    def factory(query: str, reference: str, memories: list[Any]) -> Any:
        calls.append(reference)
        return evaluator_for(query, reference, memories)

    return factory


def _settle_by_operator(ledger: HarmLedger, memories: list[Memory]) -> None:
    assert _ask(ledger, memories).recovered
    ledger.feedback(
        ledger.runs()[0].run_id, correct=False, correction="OldCo", memory_ids=["t1"],
        authority="operator", source_id="ops",
    )  # fmt: skip
    replay_pending(ledger, evaluator_for=evaluator_for)
    assert ledger.prior_candidate(memories, query=sam.QUESTION).settled == ("t1",)


def test_an_upheld_settlement_is_quiet_until_the_period_ends(ledger_url: str) -> None:
    """Challenged on every ask, a trusted settlement costs one re-verification per quiet
    period (same context), not one per routine pass; a changed context is re-verified at
    once, and ``quiet_seconds=0`` re-verifies every pass (counted evaluator factories)."""
    clock = _Clock()
    with HarmLedger(ledger_url, clock=clock) as ledger:
        memories = _memories()
        _settle_by_operator(ledger, memories)
        calls: list[str] = []
        for _ in range(3):
            _ask(ledger, memories)  # challenged on every ask
        [first] = reverify_pending(ledger, evaluator_for=_counting(calls))
        assert not isinstance(first, Exception) and first.upheld == ["t1"]
        assert calls == ["OldCo"]
        for _ in range(5):  # five passes, a challenge before each: all covered
            _ask(ledger, memories)
            assert reverify_pending(ledger, evaluator_for=_counting(calls)) == []
            assert ledger.stats()["settlements"]["pending"] == 0
        assert calls == ["OldCo"]
        _ask(ledger, memories)  # the same challenge with no quiet period: re-verified
        [again] = reverify_pending(ledger, evaluator_for=_counting(calls), quiet_seconds=0)
        assert not isinstance(again, Exception) and again.upheld == ["t1"]
        assert calls == ["OldCo"] * 2

        clock.now += timedelta(seconds=REVERIFY_QUIET_SECONDS + 1)  # the period ends
        assert reverify_pending(ledger, evaluator_for=_counting(calls)) == []  # no new one
        _ask(ledger, memories)
        [late] = reverify_pending(ledger, evaluator_for=_counting(calls))
        assert not isinstance(late, Exception) and late.upheld == ["t1"]
        assert calls == ["OldCo"] * 3

        _ask(ledger, _memories(frozenset({"b1"})))  # another context: not covered
        [changed] = reverify_pending(ledger, evaluator_for=_counting(calls))
        assert not isinstance(changed, Exception) and len(changed.runs) == 1
        assert calls == ["OldCo"] * 4


def test_a_reverification_run_without_its_verdict_leaves_the_challenge_pending(
    ledger_url: str,
) -> None:
    """A worker killed between the re-verification run and its verdict transaction leaves
    the run behind without a verdict: the challenge stays pending and is answered later."""
    with HarmLedger(ledger_url) as ledger:
        memories = _memories()
        _settle_by_operator(ledger, memories)
        _ask(ledger, memories)
        challenge = ledger.runs()[0]
        report = MeClearEngine(FAST).clear(memories, evaluator_for("", "OldCo", memories))
        ledger.record(
            report,
            query=sam.QUESTION,
            context=memories,
            origin="reverify",
            success_signal="feedback",
            replay_of=challenge.run_id,
        )  # fmt: skip  (the run a killed re-verification left)
        assert ledger.stats()["settlements"]["pending"] == 1
        [answered] = reverify_pending(ledger, evaluator_for=evaluator_for)
        assert not isinstance(answered, Exception)
        assert answered.challenge.run_id == challenge.run_id and answered.upheld == ["t1"]
        assert ledger.stats()["settlements"]["pending"] == 0


def _settle_by_reference(ledger: HarmLedger, memories: list[Memory]) -> Any:
    """An application's reference run (its reference, "OldCo", is wrong) settles t1."""
    report = MeClearEngine(FAST).clear(memories, evaluator_for("", "OldCo", memories))
    assert report.cleared_ids == ["t1"] and report.recovered
    return ledger.record(
        report,
        query=sam.QUESTION,
        context=memories,
        success_signal="reference",
        extra={"reference": "OldCo", "note": "kept"},
    )


def test_a_reference_settlement_is_reverified_against_the_reference_it_kept(
    ledger_url: str,
) -> None:
    """A text ledger keeps a reference run's reference (redacted, in ``extra``): its
    settlement is re-verified against it later without ``reference=``: upheld while the
    reference still shows the harm, lifted once it does not."""
    with HarmLedger(ledger_url) as ledger:
        memories = _memories()
        run = _settle_by_reference(ledger, memories)
        assert run.extra["reference"] == "OldCo" and run.extra["note"] == "kept"
        assert ledger.prior_candidate(memories, query=sam.QUESTION).settled == ("t1",)
        assert not _ask(ledger, memories).recovered  # the challenge
        [upheld] = reverify_pending(ledger, evaluator_for=evaluator_for)
        assert not isinstance(upheld, Exception)
        assert upheld.upheld == ["t1"] and len(upheld.runs) == 1
        assert upheld.runs[0].success_signal == "reference"
        assert "given reference" in upheld.reasons["t1"]

        fewer = _memories(frozenset({"s1"}))
        assert _ask(ledger, fewer).cleared_ids == ["t1"]  # a new context: re-verified
        [lifted] = reverify_pending(ledger, evaluator_for=evaluator_for)
        assert not isinstance(lifted, Exception) and lifted.lifted == ["t1"]
        assert "t1" in _ask(ledger, fewer).kept_ids


def test_a_ledger_without_texts_keeps_no_reference(ledger_url: str) -> None:
    """``store_text=False``: the reference is dropped like every text; the settlement then
    stands on a challenge (nothing to re-verify against) unless ``reference=`` is given."""
    with HarmLedger(ledger_url, store_text=False) as ledger:
        memories = _memories()
        run = _settle_by_reference(ledger, memories)
        assert "reference" not in run.extra and run.extra["note"] == "kept"
        assert not _ask(ledger, memories).recovered
        [stands] = reverify_pending(ledger, evaluator_for=evaluator_for)
        assert isinstance(stands, ReplayError)  # no question text either: says what to pass
        challenge = ledger.runs()[0]
        result = reverify_settlement(
            ledger, challenge.run_id, evaluator_for=evaluator_for, query=sam.QUESTION,
            resolve=lambda ids: {m.id: m.content for m in memories if m.id in ids},
        )  # fmt: skip
        assert result.upheld == ["t1"] and not result.runs
        assert "kept no reference answer" in result.reasons["t1"]


def test_pending_challenges_reads_through_indexes(ledger_url: str) -> None:
    """No full scan of ``meclear_runs`` (SQLite's query plan; PostgreSQL plans by size)."""
    with HarmLedger(ledger_url) as ledger:
        memories = _memories()
        _settle_by_operator(ledger, memories)
        _ask(ledger, memories)
        if ledger.engine.dialect.name != "sqlite":
            return
        statements: list[tuple[str, Any]] = []

        def seen(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
            statements.append((statement, params))

        event.listen(ledger.engine, "before_cursor_execute", seen)
        try:
            with ledger.engine.connect() as conn:
                assert len(pending_challenges(conn, ledger.namespace)) == 1
        finally:
            event.remove(ledger.engine, "before_cursor_execute", seen)
        assert statements
        with ledger.engine.connect() as conn:
            for statement, params in statements:
                plan = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).all()
                details = " | ".join(str(row[-1]) for row in plan)
                assert "SCAN meclear_runs" not in details, details
                assert "SCAN meclear_memory_events" not in details, details
