"""HarmLedger on SQLite and PostgreSQL: what is recorded, looked up and never leaked."""

from __future__ import annotations

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.ledger import HarmLedger, LedgerLookupError
from meclear_integrations.runtime.hashing import content_hash, query_hash
from tests.support.clocks import StepClock
from tests.support.ledger import clear, evaluator, memories

SECRET = "sk-proj-abcdefghijklmnopqrstuvwx"


@pytest.fixture
def ledger(ledger_url: str):
    with HarmLedger(ledger_url, clock=StepClock(), store_text=False) as led:
        yield led


def test_a_full_decision_is_recorded_with_every_field(ledger: HarmLedger) -> None:
    context = memories("g", "x", "f", "y")
    report = clear(context, {"g"}, {"f"})
    run = ledger.record(
        report,
        query="Where did Ann go?",
        context=context,
        success_signal="reference",
        agent_model="gpt-test",
        judge_model="judge-test",
        model_calls=2 * report.cost.evaluator_calls,
        trace_run_id="trace-1",
        trace_system="langsmith",
        trigger="always",
    )
    again = ledger.find_run(run.run_id)
    assert again == run
    assert again.mode == "full" and again.status == "complete" and again.recovered
    assert again.query_id == query_hash("Where did Ann go?") and again.query_text is None
    assert again.cleared_ids == ["f"] and again.memory_ids == ["g", "x", "f", "y"]
    f = again.memories[2]
    assert f.content_hash == content_hash("text of f") and f.text is None
    assert f.harmful and f.cleared and f.shapley is not None and f.shapley < 0
    assert f.shapley_interval is not None and f.loo_effect is not None and f.loo_label
    assert again.candidates[0].memory_ids == []
    assert any(c.admissible and c.memory_ids == ["f"] for c in again.candidates)
    assert again.model_calls == 2 * report.cost.evaluator_calls
    assert again.evaluator_calls == report.cost.evaluator_calls
    assert again.cost["coalitions"] == report.cost.coalitions
    assert (again.agent_model, again.judge_model) == ("gpt-test", "judge-test")
    assert (again.trace_run_id, again.trace_system, again.trigger) == (
        "trace-1",
        "langsmith",
        "always",
    )
    assert again.success_signal == "reference" and again.harm_tolerance == 0.05


def test_texts_only_on_opt_in_and_never_secrets(ledger_url: str) -> None:
    context = [Memory(id="g", content="gold"), Memory(id="f", content=f"key {SECRET}")]
    report = clear(context, {"g"}, {"f"})
    with HarmLedger(ledger_url, store_text=True) as led:
        run = led.record(
            report,
            query=f"what is api_key={SECRET}?",
            context=context,
            agent_model=f"model {SECRET}",
            extra={"api_key": "plain-secret-value", "note": f"Bearer {SECRET}"},
        )
        stored = led.find_run(run.run_id)
    dumped = stored.model_dump_json()
    assert SECRET not in dumped and "plain-secret-value" not in dumped
    assert stored.query_text is not None and stored.query_text.startswith("what is api_key=")
    assert stored.memories[0].text == "gold"
    assert stored.memories[1].content_hash == content_hash(f"key {SECRET}")  # of the original


def test_skips_failures_and_guided_runs_have_their_modes(ledger: HarmLedger) -> None:
    context = memories("g", "f")
    cold = clear(context, {"g"}, {"f"})
    guided = clear(context, {"g"}, {"f"}, prior=["f"])
    clean = clear(context, {"g", "f"}, set())
    skipped = clean.model_copy(
        update={"status": "skipped", "status_reason": "not_sampled", "early_exit": False}
    )
    modes = [
        ledger.record(r, query="q", context=context, guided_by=g).mode
        for r, g in ((cold, "ledger"), (guided, "ledger"), (guided, "feedback"), (clean, "x"))
    ]
    modes.append(ledger.record(skipped, query="q", context=context).mode)
    assert modes == ["full", "ledger_guided", "feedback_guided", "early_exit", "skipped"]


def test_prior_harmful_needs_the_same_text_and_a_verified_recovery(ledger: HarmLedger) -> None:
    context = memories("g", "f", "h")
    ledger.record(clear(context, {"g"}, {"f"}), query="q1", context=context)
    assert ledger.prior_harmful(context) == ["f"]
    edited = [context[0], Memory(id="f", content="a corrected text"), context[2]]
    assert ledger.prior_harmful(edited) == []
    # an unrecovered run (no gold memory left) is not evidence
    other = memories("a", "h")
    failed = MeClearEngine(ClearanceConfig()).clear(other, evaluator(set(), {"h"}))
    ledger.record(failed, query="q2", context=other)
    assert ledger.prior_harmful(other) == []


def test_restore_blocks_the_shortcut_until_new_verified_evidence(ledger: HarmLedger) -> None:
    context = memories("g", "f")
    ledger.record(clear(context, {"g"}, {"f"}), query="q1", context=context)
    ledger.restore("f", reason="a person says it is right", actor="ops")
    assert ledger.prior_harmful(context) == []
    assert ledger.history("f").restored
    # a later full clearance verifies it harmful again
    ledger.record(clear(context, {"g"}, {"f"}), query="q2", context=context)
    assert ledger.prior_harmful(context) == ["f"]
    assert not ledger.history("f").restored


def test_feedback_finds_runs_by_run_trace_or_query_id(ledger: HarmLedger) -> None:
    context = memories("g", "f")
    report = clear(context, {"g"}, {"f"})
    first = ledger.record(report, query="q1", context=context, trace_run_id="ls-1")
    latest = ledger.record(report, query="q1", context=context)
    assert ledger.feedback(first.run_id, correct=True).run_id == first.run_id
    assert ledger.feedback("ls-1", correct=True).run_id == first.run_id
    assert ledger.feedback(ledger.query_id("q1"), correct=False).run_id == latest.run_id
    with pytest.raises(LedgerLookupError, match="no run"):
        ledger.feedback("nope", correct=False)
    with pytest.raises(ValueError, match="not in the context"):
        ledger.feedback(first.run_id, correct=False, memory_ids=["elsewhere"])
    with pytest.raises(TypeError):
        ledger.feedback(first.run_id, correct="no")  # type: ignore[arg-type]


def test_negative_feedback_with_a_correction_waits_for_a_replay(ledger: HarmLedger) -> None:
    context = memories("g", "f")
    run = ledger.record(clear(context, {"g", "f"}, set()), query="q", context=context)
    fb = ledger.feedback(
        run.run_id, correct=False, correction=f"Paris {SECRET}", memory_ids=["f"], comment="old"
    )
    assert fb.memory_ids == ["f"] and SECRET not in (fb.correction or "")
    assert [p.feedback_id for p in ledger.pending_replays()] == [fb.feedback_id]
    assert ledger.latest_feedback(run.query_id) == fb
    # a replay recorded for it answers it
    ledger.record(
        clear(context, {"g"}, {"f"}),
        query="q",
        context=context,
        origin="replay",
        success_signal="feedback",
        replay_of=run.run_id,
        feedback_id=fb.feedback_id,
    )
    assert ledger.pending_replays() == []
    history = ledger.history("f")
    assert [o.origin for o in history.observations] == ["live", "replay"]
    assert [f.feedback_id for f in history.feedback] == [fb.feedback_id]


def test_only_trusted_positive_feedback_restores_a_cleared_memory(ledger: HarmLedger) -> None:
    context = memories("g", "f")
    run = ledger.record(clear(context, {"g"}, {"f"}), query="q", context=context)
    ledger.feedback(run.run_id, correct=True, memory_ids=["g"], trusted=True)  # never cleared
    assert ledger.history("g").events == []
    # issue 28 item 7: untrusted feedback is recorded, never acted on alone
    fb = ledger.feedback(run.run_id, correct=True, memory_ids=["f"])
    assert ledger.prior_harmful(context) == ["f"] and ledger.history("f").events == []
    assert ledger.prior_candidate(context, query="q").ids == ("f",)
    assert fb.feedback_id in [f.feedback_id for f in ledger.history("f").feedback]
    ledger.feedback(run.run_id, correct=True, memory_ids=["f"], trusted=True, source="cli")
    assert ledger.prior_harmful(context) == []
    event = ledger.history("f").events[0]
    assert event.reason == "confirmed good by reviewer positive feedback"
    assert event.actor == "reviewer:cli"  # who (role and source), when, why: audited


def test_namespaces_do_not_see_each_other(ledger_url: str) -> None:
    context = memories("g", "f")
    with HarmLedger(ledger_url, namespace="a") as a, HarmLedger(ledger_url, namespace="b") as b:
        a.record(clear(context, {"g"}, {"f"}), query="q", context=context)
        assert a.prior_harmful(context) == ["f"] and b.prior_harmful(context) == []
        assert b.stats()["runs"] == 0 and a.stats()["runs"] == 1
        with pytest.raises(LedgerLookupError):
            b.find_run(a.query_id("q"))


def test_keyed_query_ids_differ_from_plain_ones(ledger_url: str) -> None:
    with HarmLedger(ledger_url, query_key="s3cret") as led:
        assert led.query_id("Where?") != query_hash("Where?")
        assert led.query_id("Where?") == query_hash("  Where? ", key="s3cret")


def test_stats_count_modes_calls_and_feedback(ledger: HarmLedger) -> None:
    context = memories("g", "f")
    run = ledger.record(clear(context, {"g"}, {"f"}), query="q", context=context, model_calls=10)
    ledger.record(clear(context, {"g"}, {"f"}, prior=["f"]), query="q2", model_calls=4)
    ledger.feedback(run.run_id, correct=False)
    stats = ledger.stats()
    assert stats["runs_by_mode"] == {"full": 1, "ledger_guided": 1}
    assert stats["model_calls"] == 14 and stats["distinct_queries"] == 2
    assert stats["feedback"] == {"correct": 0, "incorrect": 1}


def test_repr_hides_the_password() -> None:
    led = object.__new__(HarmLedger)
    led.url, led.namespace = "postgresql+psycopg://u:hunter2@db/x", "n"
    assert "hunter2" not in repr(led)
