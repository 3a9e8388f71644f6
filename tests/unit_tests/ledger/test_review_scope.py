"""Issue 24 item 3: review never proposes a true memory after one question's misreading.

One question misreads a true note and clears it (a verified full run). Then unrelated
questions retrieve it with a context that fails for another reason (any removal helps): the
unscoped ledger offered it to each of them, each guided run verified, and review proposed the
true note with 5 harmful queries. Scoped, the unrelated questions never get it, and review
counts only questions where a run that chose it itself proved it harmful.
"""

from __future__ import annotations

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.guard.gate import ClearanceGate
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.triggers import Always
from tests.support.clocks import StepClock

BANK = {
    "mother": "Sam's mother lives in Chicago.",
    "work": "Sam works at a bakery in Denver.",
    "dentist": "Sam's dentist appointment is on May 9.",
    "dog": "Sam's dog is called Rex.",
    "car": "Sam drives a blue car.",
    "sister": "Sam's sister is a nurse.",
    "gym": "Sam goes to the gym on Mondays.",
}
QUESTIONS = [
    ("Where does Sam work?", "work"),
    ("What is Sam's dog called?", "dog"),
    ("What colour is Sam's car?", "car"),
    ("What does Sam's sister do?", "sister"),
    ("When does Sam go to the gym?", "gym"),
]
CONTEXT = [Memory(id=k, content=v) for k, v in BANK.items()]


def evaluator(index: int, gold: str):
    """Question 0 misreads the mother note; the others fail on the full context only."""

    def evaluate(coalition, trial) -> float:
        ids = {m.id for m in coalition}
        if gold not in ids:
            return 0.0
        if index == 0:
            return 0.0 if "mother" in ids else 1.0
        return 0.0 if len(ids) == len(BANK) else 1.0  # any removal helps

    return evaluate


@pytest.fixture
def ledger(ledger_url: str):
    with HarmLedger(ledger_url, clock=StepClock()) as led:
        yield led


def run_stream(ledger: HarmLedger) -> list[list[str]]:
    gate = ClearanceGate(trigger=Always(), ledger=ledger)
    offered = []
    for i, (question, gold) in enumerate(QUESTIONS):
        plan = gate.plan(question, CONTEXT, ClearanceConfig())
        report = MeClearEngine(plan.config).clear(
            CONTEXT, evaluator(i, gold), prior_harmful=plan.prior
        )
        gate.finish(plan, report, success_signal="judge")
        offered.append(list(plan.prior_ids))
    return offered


def test_one_misreading_then_unrelated_questions_proposes_no_true_memory(ledger) -> None:
    offered = run_stream(ledger)
    assert offered == [[]] * len(QUESTIONS)  # the unrelated questions never get "mother"
    assert ledger.review(min_queries=2) == []  # main: mother, 5 harmful and 0 beneficial
    harmful = {e.memory_id for e in ledger.evidence() if e.verdict == "harmful"}
    needed = {e.memory_id for e in ledger.evidence() if e.needed}
    proposed = {p.memory_id for p in ledger.review(min_queries=1, min_consistency=0.0)}
    assert "mother" in harmful  # question 0 did prove it harmful for itself
    assert proposed <= harmful - needed  # never a memory some question needs
    assert {"dog", "gym"} <= needed


def test_a_memory_a_question_needs_is_never_proposed(ledger) -> None:
    """Harmful (full runs) on four questions, needed by a fifth: main proposed it (4/5)."""
    stale = Memory(id="stale", content="Sam's dentist appointment is on March 3.")
    for i in range(4):
        context = [stale, Memory(id=f"g{i}", content=f"fact {i}")]

        def fails_with_stale(coalition, trial, gold=f"g{i}") -> float:
            ids = {m.id for m in coalition}
            return 1.0 if gold in ids and "stale" not in ids else 0.0

        report = MeClearEngine(ClearanceConfig()).clear(context, fails_with_stale)
        assert report.cleared_ids == ["stale"]
        ledger.record(report, query=f"question {i}", context=context)
    [proposal] = ledger.review()
    assert proposal.memory_id == "stale" and proposal.harmful_queries == 4
    context = [stale, Memory(id="bg", content="background")]
    report = MeClearEngine(ClearanceConfig()).clear(
        context, lambda c, t: 1.0 if "stale" in {m.id for m in c} and len(c) < 2 else 0.5
    )
    ledger.record(report, query="When was the old appointment?", context=context)
    assert "stale" not in {p.memory_id for p in ledger.review(min_queries=1, min_consistency=0)}
    assert any(e.needed for e in ledger.evidence() if e.memory_id == "stale")
