"""ClearanceGate: untriggered queries cost nothing, repeats are cheap, failures stay local."""

from __future__ import annotations

import asyncio

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.engine import verifier
from meclear_integrations.guard.gate import ClearanceGate
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.triggers import (
    OnKnownHarm,
    OnNegativeFeedback,
    Sampling,
    TokenBudget,
    Trigger,
    WhenJudgeFails,
)
from tests.support.games import CountingEvaluator

CONTEXT = [
    Memory(id="gold", content="Ann moved to Paris in 2021."),
    Memory(id="stale", content="Ann moved to Rome in 2021."),
    Memory(id="bg", content="Ann likes tea."),
]


def value(ids: frozenset[str]) -> float:
    return 1.0 if "gold" in ids and "stale" not in ids else 0.0


def run(gate: ClearanceGate, query: str = "Where did Ann move?", context=CONTEXT, **record):
    evaluate = CountingEvaluator(value)
    plan = gate.plan(query, context, ClearanceConfig())
    if plan.run:
        engine = MeClearEngine(plan.config)
        report = engine.clear(context, evaluate, prior_harmful=plan.prior_ids)
    else:
        report = gate.skipped(plan)
    outcome = gate.finish(plan, report, success_signal="reference", **record)
    return plan, outcome, len(evaluate.calls)


@pytest.fixture
def ledger(tmp_path):
    with HarmLedger(tmp_path / "ledger.db") as led:
        yield led


def test_an_untriggered_query_costs_nothing_and_is_recorded(ledger: HarmLedger) -> None:
    gate = ClearanceGate(trigger=Sampling(0.0), ledger=ledger)
    plan, outcome, calls = run(gate)
    assert calls == 0 and not plan.run and plan.prior_ids == ()
    assert outcome.report.status == "skipped"
    assert outcome.returned_ids == ["gold", "stale", "bg"]
    meta = outcome.metadata()
    assert meta["status"] == "skipped" and meta["status_reason"].endswith(":not_sampled")
    assert meta["trigger"] == {"policy": "sampling(0)", "reason": "not_sampled", "run": False}
    recorded = ledger.find_run(outcome.ledger_run_id)
    assert recorded.mode == "skipped" and recorded.trigger == "sampling(0)"
    assert recorded.model_calls is None and recorded.evaluator_calls == 0


def test_second_query_is_ledger_guided(ledger: HarmLedger) -> None:
    gate = ClearanceGate(trigger=WhenJudgeFails(), ledger=ledger)
    _, cold, cold_calls = run(gate, "Where did Ann move?")
    plan, warm, warm_calls = run(gate, "Which city did Ann move to?")
    assert cold.returned_ids == warm.returned_ids == ["gold", "bg"]
    assert plan.prior_ids == ("stale",)
    assert warm.report.clearance_search == "prior" and warm.metadata()["ledger_guided"]
    config = ClearanceConfig()  # M: T trials; the prior candidate: its recovery test
    assert warm_calls == config.trials + verifier(config).verify_trials
    assert cold_calls >= 2 * warm_calls  # K=3: 12 vs 6 (the sequential rule's trials)
    assert ledger.find_run(warm.ledger_run_id).mode == "ledger_guided"


def test_shortcut_off_records_but_clears_cold(ledger: HarmLedger) -> None:
    gate = ClearanceGate(ledger=ledger, shortcut=False)
    run(gate)
    plan, outcome, _ = run(gate, "Ann's city?")
    assert plan.prior_ids == () and outcome.report.clearance_search != "prior"
    assert ledger.stats()["runs_by_mode"] == {"full": 2}


def test_a_restored_memory_is_never_offered(ledger: HarmLedger) -> None:
    gate = ClearanceGate(ledger=ledger)
    run(gate)
    ledger.restore("stale", reason="a person checked it")
    plan, outcome, _ = run(gate, "Ann's city?")
    assert plan.prior_ids == ()
    assert outcome.report.clearance_search != "prior"  # a full run, which finds it again
    assert outcome.report.cleared_ids == ["stale"]
    assert run(gate, "Ann's city, again?")[0].prior_ids == ("stale",)  # new evidence


def test_known_harm_and_negative_feedback_triggers(ledger: HarmLedger) -> None:
    gate = ClearanceGate(trigger=OnKnownHarm(ledger) | OnNegativeFeedback(ledger), ledger=ledger)
    plan, outcome, calls = run(gate)
    assert not plan.run and calls == 0  # nothing known yet
    ledger.feedback(outcome.ledger_run_id, correct=False)
    plan, outcome, calls = run(gate)
    assert plan.run and plan.decision.reason == "negative_feedback" and calls > 0
    assert outcome.returned_ids == ["gold", "bg"]
    other = [CONTEXT[1], Memory(id="gold2", content="Ann lives in Paris.")]
    plan, _, _ = run(gate, "Remind me, where did Ann move?", context=other)  # a paraphrase
    assert plan.run and plan.decision.reason == "known_harm"
    assert plan.prior_ids == ("stale",) and plan.prior_scoped
    plan, _, _ = run(gate, "What does Ann like to drink?", context=other)  # scoped: unrelated
    assert not plan.run and plan.decision.reason == "no_known_harm+no_negative_feedback"


def test_token_budget_drops_least_contributing_after_clearance(ledger: HarmLedger) -> None:
    gate = ClearanceGate(trigger=TokenBudget(8), ledger=ledger)  # ~7 tokens per memory
    plan, outcome, _ = run(gate)
    assert plan.config.early_exit is False
    assert outcome.report.cleared_ids == ["stale"]
    assert outcome.budget is not None and outcome.budget.dropped_ids == ["bg"]
    assert outcome.returned_ids == ["gold"]
    meta = outcome.metadata()["token_budget"]
    assert meta["reason"] == "token_budget" and meta["order"] == "least_contribution"
    assert ledger.find_run(outcome.ledger_run_id).extra["token_budget"]["dropped_ids"] == ["bg"]
    # the policy's own counter counts the fit too: 2 words per memory, budget 4 keeps two
    words = ClearanceGate(trigger=TokenBudget(4, counter=lambda t: len(t.split()[:2])))
    assert run(words)[1].returned_ids == ["gold", "bg"]


class BrokenLedger:
    def query_id(self, query: str) -> str:
        return "q"

    def prior_harmful(self, context):
        raise ConnectionError("server closed the connection; password=hunter2")

    def record(self, report, **kwargs):
        raise ConnectionError("server closed the connection")


class BrokenTrigger(Trigger):
    name = "broken"

    def decide(self, context):
        raise RuntimeError("feedback table unreachable")


def test_runtime_failures_of_the_ledger_or_trigger_never_fail_the_query(caplog) -> None:
    gate = ClearanceGate(trigger=BrokenTrigger(), ledger=BrokenLedger())  # type: ignore[arg-type]
    plan, outcome, calls = run(gate)
    assert plan.run and plan.decision.reason == "trigger_error" and calls > 0
    assert outcome.returned_ids == ["gold", "bg"] and outcome.ledger_run_id is None
    notes = outcome.metadata()["notes"]
    assert set(notes) == {"trigger", "ledger"} and "hunter2" not in str(notes)
    assert "record failed" in notes["ledger"]
    assert any("ledger" in r.message for r in caplog.records)


def test_async_plan_and_finish_match_sync(ledger: HarmLedger) -> None:
    gate = ClearanceGate(trigger=OnKnownHarm(ledger) | WhenJudgeFails(), ledger=ledger)
    run(gate)

    async def main():
        plan = await gate.aplan("Where did Ann move?", CONTEXT, ClearanceConfig())
        report = await MeClearEngine(plan.config).aclear(
            CONTEXT, CountingEvaluator(value), prior_harmful=plan.prior_ids
        )
        return plan, await gate.afinish(plan, report, success_signal="judge")

    plan, outcome = asyncio.run(main())
    assert plan.prior_ids == ("stale",) and plan.decision.run
    assert outcome.report.clearance_search == "prior"
    assert ledger.find_run(outcome.ledger_run_id).success_signal == "judge"


def test_without_a_ledger_the_gate_only_triggers() -> None:
    gate = ClearanceGate(trigger=WhenJudgeFails())
    plan, outcome, _ = run(gate)
    assert plan.prior_ids == () and outcome.ledger_run_id is None
    assert plan.query_id.startswith("q-")
