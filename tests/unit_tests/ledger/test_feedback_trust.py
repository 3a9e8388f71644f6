"""Issue 28 item 7: feedback that restores or exonerates a memory needs verification.

One positive feedback naming a memory used to restore it without verification, even on the
run where it was cleared: it dropped out of review and the next repeat ran the full
algorithm. Untrusted feedback is now recorded, never acted on alone.
"""

from __future__ import annotations

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.ledger import HarmLedger, ReplayError, replay_feedback, replay_pending
from tests.support.clocks import StepClock

STALE = Memory(id="stale", content="Ann moved to Rome in 2021.")
GOLD = Memory(id="gold", content="Ann moved to Paris in 2021.")
QUESTIONS = ("Where did Ann move in 2021?", "Which city is Ann living in now?")


def answer(ids: set[str]) -> str:
    if "stale" in ids:
        return "Rome"
    return "Paris" if "gold" in ids else "I don't know"


def against(reference: str):
    def evaluate(coalition, trial) -> float:
        return 1.0 if answer({m.id for m in coalition}) == reference else 0.0

    return evaluate


def evaluator_for(query: str, reference: str, memories: list[Memory]):
    return against(reference)


@pytest.fixture
def ledger(ledger_url: str):
    with HarmLedger(ledger_url, clock=StepClock(), store_text=True) as led:
        yield led


def record_stale_harm(ledger: HarmLedger) -> list[str]:
    run_ids = []
    for question in QUESTIONS:
        context = [GOLD, STALE, Memory(id="bg", content="Ann likes tea.")]
        report = MeClearEngine(ClearanceConfig()).clear(context, against("Paris"))
        assert report.cleared_ids == ["stale"]
        run_ids.append(
            ledger.record(
                report, query=question, context=context, success_signal="reference"
            ).run_id
        )
    return run_ids


def test_one_positive_feedback_is_no_backdoor(ledger: HarmLedger) -> None:
    first, _ = record_stale_harm(ledger)
    assert [p.memory_id for p in ledger.review()] == ["stale"]
    context = [GOLD, STALE]
    # the attack: "the answer was right and 'stale' is good", on the run that cleared it
    fb = ledger.feedback(first, correct=True, memory_ids=["stale"], comment="stale is fine")
    assert ledger.history("stale").events == []  # recorded, not acted on
    assert [p.memory_id for p in ledger.review()] == ["stale"]  # still proposed
    assert ledger.prior_candidate(context, query=QUESTIONS[0]).ids == ("stale",)
    assert ledger.prior_harmful(context) == ["stale"]
    assert ledger.pending_replays() == []  # no correction: nothing to verify against
    with pytest.raises(ReplayError, match="not replayable"):
        replay_feedback(ledger, fb, evaluator_for=evaluator_for)
    fb = ledger.feedback(first, correct=True, memory_ids=["stale"], correction="Paris")
    # its verification replay: the context WITH the memory does not answer right
    [result] = replay_pending(ledger, evaluator_for=evaluator_for)
    assert not isinstance(result, Exception)
    assert result.feedback.feedback_id == fb.feedback_id
    assert result.exonerated == [] and result.restored == []
    assert "stale" in result.report.cleared_ids
    assert [p.memory_id for p in ledger.review()] == ["stale"]


def test_a_verified_positive_feedback_exonerates_for_its_question_only(ledger) -> None:
    # a judge that wants "I don't know" wrongly clears the gold note for QUESTIONS[0]
    context = [GOLD, Memory(id="bg", content="Ann likes tea.")]
    report = MeClearEngine(ClearanceConfig()).clear(context, against("I don't know"))
    assert report.cleared_ids == ["gold"]
    run = ledger.record(report, query=QUESTIONS[0], context=context)
    other = ledger.record(report, query=QUESTIONS[0] + " Please answer.", context=context)
    assert ledger.prior_candidate(context, query=QUESTIONS[0]).ids == ("gold",)
    fb = ledger.feedback(
        run.run_id, correct=True, memory_ids=["gold"], correction="Paris", authority="reviewer"
    )
    assert ledger.prior_candidate(context, query=QUESTIONS[0]).ids == ("gold",)  # not yet
    result = replay_feedback(ledger, fb, evaluator_for=evaluator_for)
    assert result.exonerated == ["gold"] and result.report.recovered
    assert ledger.prior_candidate(context, query=QUESTIONS[0]).ids == ()
    # scoped: another recorded question's verified harm is not lifted by it
    assert [h.query_id for h in ledger.scoped_harm(QUESTIONS[0] + " Please answer.", context)] == [
        other.query_id
    ]
    assert ledger.history("gold").events == []  # no global restore


def test_a_trusted_positive_feedback_restores(ledger: HarmLedger) -> None:
    first, _ = record_stale_harm(ledger)
    ledger.feedback(first, correct=True, memory_ids=["stale"], trusted=True, source="reviewer")
    assert ledger.review() == [] and ledger.prior_harmful([GOLD, STALE]) == []
    with pytest.raises(TypeError):
        ledger.feedback(first, correct=True, memory_ids=["stale"], trusted="yes")
