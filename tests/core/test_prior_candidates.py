"""Prior candidates: memories verified harmful before are verified first, never trusted."""

from __future__ import annotations

import asyncio

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, StageEvent
from meclear_integrations.core.engine import verifier
from tests.core.games import CountingEvaluator, make_memories

VERIFIED = verifier(ClearanceConfig()).verify_trials
"""Trials the default (sequential) rule gives a context that passes every one (4)."""


def direct_value(ids: frozenset[str]) -> float:
    """m0 supports the answer; m3 alone overrides it (direct harm)."""
    return 1.0 if "m0" in ids and "m3" not in ids else 0.0


def redundant_value(ids: frozenset[str]) -> float:
    """m0 supports the answer; m1 and m3 each alone override it (redundant harm)."""
    return 1.0 if "m0" in ids and not ids & {"m1", "m3"} else 0.0


def clean_value(ids: frozenset[str]) -> float:
    return 1.0 if "m0" in ids else 0.0


def run(value, prior=(), config: ClearanceConfig | None = None, events=None):
    evaluate = CountingEvaluator(value)
    engine = MeClearEngine(config or ClearanceConfig(), listener=events)
    report = engine.clear(make_memories(5), evaluate, prior_harmful=prior)
    return report, evaluate


def test_verified_prior_is_the_clearance_at_two_t_calls() -> None:
    cold, cold_calls = run(direct_value)
    assert cold.cleared_ids == ["m3"] and cold.clearance_search != "prior"
    warm, warm_calls = run(direct_value, prior=["m3"])
    trials = VERIFIED
    assert warm.clearance_search == "prior"
    assert warm.cleared_ids == ["m3"] and warm.recovered
    assert warm.prior_ids == ["m3"]
    assert warm.attributions == []
    # the failing baseline's T trials and the prior candidate's recovery test
    assert len(warm_calls.calls) == ClearanceConfig().trials + trials
    assert len(cold_calls.calls) > 2 * len(warm_calls.calls)
    assert [c.memory_ids for c in warm.candidates] == [[], ["m3"]]
    assert warm.candidates[1].trials == trials and warm.candidates[1].gain == 1.0
    assert warm.final_value == 1.0 and warm.baseline_value == 0.0


def test_prior_that_does_not_recover_falls_back_to_the_full_algorithm() -> None:
    cold, cold_calls = run(redundant_value)
    # m1 alone was harmful for another query; here m3 also overrides the answer
    warm, warm_calls = run(redundant_value, prior=["m1"])
    assert warm.clearance_search != "prior"
    assert warm.cleared_ids == cold.cleared_ids == ["m1", "m3"]
    assert warm.prior_ids == ["m1"]
    assert warm.attributions  # attribution ran
    assert len(warm_calls.calls) <= len(cold_calls.calls) + VERIFIED


def test_a_beneficial_prior_is_never_cleared() -> None:
    """The ledger's belief is wrong here (m0 is the evidence): verification refuses it."""
    warm, _ = run(direct_value, prior=["m0", "m3"])
    assert warm.clearance_search != "prior"
    assert "m0" not in warm.cleared_ids and warm.cleared_ids == ["m3"]


def test_prior_ids_outside_the_context_change_nothing() -> None:
    cold, cold_calls = run(direct_value)
    warm, warm_calls = run(direct_value, prior=["elsewhere", "gone"])
    assert warm.prior_ids == []
    assert warm.cleared_ids == cold.cleared_ids
    assert sorted(warm_calls.calls, key=repr) == sorted(cold_calls.calls, key=repr)


def test_clean_context_exits_early_without_trying_the_prior() -> None:
    report, calls = run(clean_value, prior=["m3"])
    assert report.early_exit and report.cleared_ids == []
    assert len(calls.calls) == VERIFIED
    assert report.prior_ids == ["m3"]


def test_without_early_exit_baseline_and_prior_share_one_round() -> None:
    config = ClearanceConfig(early_exit=False)
    report, calls = run(direct_value, prior=["m3"], config=config)
    assert report.clearance_search == "prior"
    assert report.cost.rounds == 1
    assert len(calls.calls) == config.trials + VERIFIED  # the baseline T, the prior its test


def test_prior_shortcut_events_pair_up() -> None:
    events: list[StageEvent] = []
    run(direct_value, prior=["m3"], events=events.append)
    assert [(e.stage, e.phase) for e in events] == [
        ("screening", "start"),
        ("screening", "end"),
        ("clearance", "start"),
        ("clearance", "end"),
    ]
    assert events[1].payload["prior_ids"] == ["m3"]
    assert events[2].payload["search"] == "prior"
    assert events[3].payload["cleared_ids"] == ["m3"]


@pytest.mark.parametrize("prior", [["m3"], ["m1"]])
def test_async_path_matches_sync(prior: list[str]) -> None:
    sync, _ = run(redundant_value, prior=prior)

    async def evaluate(coalition, trial):
        return redundant_value(frozenset(m.id for m in coalition))

    report = asyncio.run(
        MeClearEngine(ClearanceConfig()).aclear(make_memories(5), evaluate, prior_harmful=prior)
    )
    assert report.cleared_ids == sync.cleared_ids
    assert report.clearance_search == sync.clearance_search
    assert report.cost.evaluator_calls == sync.cost.evaluator_calls


def test_prior_run_round_trips_through_json() -> None:
    report, _ = run(direct_value, prior=["m3"])
    from meclear_integrations import ClearanceReport

    again = ClearanceReport.model_validate_json(report.model_dump_json())
    assert again.clearance_search == "prior" and again.prior_ids == ["m3"]
    assert "prior candidate [m3] verified" in report.to_table()
