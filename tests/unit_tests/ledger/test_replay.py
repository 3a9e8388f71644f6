"""Replaying negative feedback: verified against the correction, recorded, restoring."""

from __future__ import annotations

import asyncio

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.ledger import (
    HarmLedger,
    ReplayError,
    areplay_feedback,
    replay_feedback,
    replay_pending,
)

CONTEXT = [
    Memory(id="gold", content="Ann moved to Paris in 2021."),
    Memory(id="stale", content="Ann moved to Rome in 2021."),
    Memory(id="bg", content="Ann likes tea."),
]
STORE = {m.id: m.content for m in CONTEXT}
QUERY = "Where did Ann move in 2021?"


def answer(ids: set[str]) -> str:
    """The agent: the stale record outweighs the gold one."""
    if "stale" in ids:
        return "Rome"
    return "Paris" if "gold" in ids else "I don't know"


def against(reference: str):
    def evaluate(coalition, trial):
        return 1.0 if answer({m.id for m in coalition}) == reference else 0.0

    return evaluate


def evaluator_for(query: str, reference: str, memories: list[Memory]):
    assert query == QUERY and [m.id for m in memories] == ["gold", "stale", "bg"]
    return against(reference)


def live_run(ledger: HarmLedger, judge_accepts: set[str]):
    """A live run whose reference-free judge accepts the answers in ``judge_accepts``."""

    def evaluate(coalition, trial):
        return 1.0 if answer({m.id for m in coalition}) in judge_accepts else 0.0

    report = MeClearEngine(ClearanceConfig()).clear(CONTEXT, evaluate)
    return ledger.record(report, query=QUERY, context=CONTEXT, success_signal="judge")


@pytest.fixture
def ledger(ledger_url: str):
    with HarmLedger(ledger_url, store_text=False) as led:  # the privacy switch
        yield led


def test_a_wrong_answer_the_judge_accepted_is_cleared_by_the_replay(ledger: HarmLedger) -> None:
    original = live_run(ledger, judge_accepts={"Rome"})  # the judge is fooled: early exit
    assert original.mode == "early_exit" and original.cleared_ids == []
    fb = ledger.feedback(original.run_id, correct=False, correction="Paris", memory_ids=["stale"])
    result = replay_feedback(
        ledger,
        fb.feedback_id,
        evaluator_for=evaluator_for,
        query=QUERY,
        resolve=lambda ids: {i: STORE[i] for i in ids},
        agent_model="agent-x",
    )
    assert result.report.cleared_ids == ["stale"] and result.report.recovered
    assert result.report.clearance_search == "prior"  # the named memory, verified first
    run = ledger.find_run(result.run.run_id)
    assert (run.origin, run.mode, run.success_signal) == ("replay", "feedback_guided", "feedback")
    assert run.replay_of == original.run_id and run.feedback_id == fb.feedback_id
    assert run.agent_model == "agent-x" and run.extra["texts_from"] == "store"
    assert ledger.pending_replays() == [] and result.restored == []
    assert ledger.prior_harmful(CONTEXT) == ["stale"]  # now verified harmful


def test_a_named_memory_that_is_not_the_cause_is_not_cleared(ledger: HarmLedger) -> None:
    original = live_run(ledger, judge_accepts={"Rome"})
    fb = ledger.feedback(original.run_id, correct=False, correction="Paris", memory_ids=["bg"])
    result = replay_feedback(
        ledger, fb, evaluator_for=evaluator_for, query=QUERY,
        resolve=lambda ids: {i: STORE[i] for i in ids},
    )  # fmt: skip
    assert result.report.clearance_search != "prior"
    assert result.report.cleared_ids == ["stale"]  # the full run finds the real cause


def test_a_wrongly_suppressed_memory_is_restored(ledger: HarmLedger) -> None:
    # a judge that wants "I don't know" clears both records: the gold one wrongly
    original = live_run(ledger, judge_accepts={"I don't know"})
    assert set(original.cleared_ids) == {"gold", "stale"}
    assert set(ledger.prior_harmful(CONTEXT)) == {"gold", "stale"}
    # an end user's correction acts on no memory: history only
    fb = ledger.feedback(original.run_id, correct=False, correction="Paris")
    result = replay_feedback(
        ledger, fb, evaluator_for=evaluator_for, query=QUERY,
        resolve=lambda ids: {i: STORE[i] for i in ids},
    )  # fmt: skip
    assert result.report.cleared_ids == ["stale"] and result.restored == []
    assert set(ledger.prior_harmful(CONTEXT)) == {"gold", "stale"}
    fb = ledger.feedback(
        original.run_id, correct=False, correction="Paris", authority="operator",
        source_id="oncall@example.com", comment="gold note is right",
    )  # fmt: skip
    result = replay_feedback(
        ledger, fb, evaluator_for=evaluator_for, query=QUERY,
        resolve=lambda ids: {i: STORE[i] for i in ids},
    )  # fmt: skip
    assert result.report.cleared_ids == ["stale"] and result.restored == ["gold"]
    assert ledger.prior_harmful(CONTEXT) == ["stale"]
    assert ledger.history("gold").restored


def test_texts_from_the_ledger_when_it_stores_them(ledger_url: str) -> None:
    with HarmLedger(ledger_url, store_text=True) as ledger:
        original = live_run(ledger, judge_accepts={"Rome"})
        ledger.feedback(original.run_id, correct=False, correction="Paris")
        [result] = replay_pending(ledger, evaluator_for=evaluator_for)
        assert not isinstance(result, ReplayError)
        assert result.report.cleared_ids == ["stale"] and result.run.extra["texts_from"] == "ledger"


def test_what_cannot_be_replayed(ledger: HarmLedger) -> None:
    original = live_run(ledger, judge_accepts={"Rome"})
    positive = ledger.feedback(original.run_id, correct=True)
    resolve = lambda ids: {i: STORE[i] for i in ids}  # noqa: E731
    with pytest.raises(ReplayError, match="not replayable"):
        replay_feedback(ledger, positive, evaluator_for=evaluator_for, query=QUERY, resolve=resolve)
    fb = ledger.feedback(original.run_id, correct=False, correction="Paris")
    with pytest.raises(ReplayError, match="no query text"):
        replay_feedback(ledger, fb, evaluator_for=evaluator_for, resolve=resolve)
    with pytest.raises(ReplayError, match="does not hash"):
        replay_feedback(ledger, fb, evaluator_for=evaluator_for, query="other", resolve=resolve)
    with pytest.raises(ReplayError, match="no memory texts"):
        replay_feedback(ledger, fb, evaluator_for=evaluator_for, query=QUERY)
    edited = {**STORE, "stale": "Ann moved to Rome in 2020."}
    with pytest.raises(ReplayError, match=r"\['stale'\] changed"):
        replay_feedback(
            ledger, fb, evaluator_for=evaluator_for, query=QUERY,
            resolve=lambda ids: {i: edited[i] for i in ids},
        )  # fmt: skip
    with pytest.raises(ReplayError, match="no longer holds"):
        replay_feedback(
            ledger, fb, evaluator_for=evaluator_for, query=QUERY, resolve=lambda ids: {}
        )
    errors = replay_pending(ledger, evaluator_for=evaluator_for, resolve=resolve)
    assert len(errors) == 1 and isinstance(errors[0], ReplayError)  # no query text
    assert len(ledger.pending_replays()) == 1  # still waiting


def test_async_replay(ledger: HarmLedger) -> None:
    original = live_run(ledger, judge_accepts={"Rome"})
    fb = ledger.feedback(original.run_id, correct=False, correction="Paris")

    def async_evaluator_for(query, reference, memories):
        sync = against(reference)

        async def evaluate(coalition, trial):
            return sync(coalition, trial)

        return evaluate

    result = asyncio.run(
        areplay_feedback(
            ledger, fb, evaluator_for=async_evaluator_for, query=QUERY,
            resolve=lambda ids: {i: STORE[i] for i in ids},
        )
    )  # fmt: skip
    assert result.report.cleared_ids == ["stale"] and result.run.origin == "replay"
