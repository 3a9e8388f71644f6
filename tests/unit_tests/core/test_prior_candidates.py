"""Prior candidates: memories verified harmful before are verified first, never trusted."""

from __future__ import annotations

import asyncio

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, StageEvent
from meclear_integrations.core.engine import verifier
from meclear_integrations.core.prior import PriorCandidate
from tests.support.games import CountingEvaluator, make_memories
from tests.support.progress import check_progress

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
    assert len(calls.calls) == verifier(ClearanceConfig()).exit_trials
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
    stages = [e for e in events if e.phase != "progress"]
    assert [(e.stage, e.phase) for e in stages] == [
        ("screening", "start"),
        ("screening", "end"),
        ("clearance", "start"),
        ("clearance", "end"),
    ]
    assert stages[1].payload["prior_ids"] == ["m3"]
    assert stages[2].payload["search"] == "prior"
    assert stages[3].payload["cleared_ids"] == ["m3"]
    assert check_progress([(e.stage, e.phase, e.payload) for e in events])


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


# ---------------------------------------------------------------- put-backs (core.prior)
T = ClearanceConfig().trials


def summary(report):
    return [(c.memory_ids, c.recovered, c.trials) for c in report.candidates]


def test_a_background_member_put_back_still_recovers_and_the_union_stays_the_clearance() -> None:
    """m1 is background here (only m3 hurts): its put-back test recovers, which is
    recorded; the verified union remains the clearance."""
    prior = PriorCandidate(ids=("m1", "m3"), unproven=("m1",))
    warm, calls = run(direct_value, prior=prior)
    assert warm.clearance_search == "prior" and warm.prior_ids == ["m1", "m3"]
    assert warm.cleared_ids == ["m1", "m3"] and warm.final_value == 1.0
    assert summary(warm) == [
        ([], False, T),
        (["m1", "m3"], True, VERIFIED),
        (["m3"], True, VERIFIED),  # m1 back: still recovers, so m1 was not needed
    ]
    # baseline T, the union's recovery test, the put-back's recovery test
    assert len(calls.calls) == T + 2 * VERIFIED


def test_a_needed_member_put_back_fails_after_t_trials() -> None:
    """Redundant harm: m1 and m3 each override the answer, so putting either back fails;
    a failing put-back is settled by its first T trials."""
    prior = PriorCandidate(ids=("m1", "m3"), unproven=("m1", "m3"))
    warm, calls = run(redundant_value, prior=prior)
    assert warm.clearance_search == "prior" and warm.cleared_ids == ["m1", "m3"]
    assert summary(warm)[2:] == [(["m3"], False, T), (["m1"], False, T)]
    assert len(calls.calls) == T + VERIFIED + 2 * T


def test_proven_members_and_single_members_are_not_put_back() -> None:
    proven, proven_calls = run(direct_value, prior=PriorCandidate(ids=("m1", "m3")))
    assert proven.cleared_ids == ["m1", "m3"] and len(proven.candidates) == 2
    single, single_calls = run(direct_value, prior=PriorCandidate(ids=("m3",), unproven=("m3",)))
    assert single.cleared_ids == ["m3"] and len(single.candidates) == 2
    assert len(proven_calls.calls) == len(single_calls.calls) == T + VERIFIED


def test_plain_ids_are_a_prior_candidate_with_nothing_to_put_back() -> None:
    plain, plain_calls = run(direct_value, prior=["m1", "m3"])
    typed, typed_calls = run(direct_value, prior=PriorCandidate(ids=("m1", "m3")))
    assert summary(plain) == summary(typed) and len(plain_calls.calls) == len(typed_calls.calls)


def test_each_put_back_is_tested_against_the_whole_union() -> None:
    """Joint harm: m1 and m3 mislead only together, so either one back still recovers."""

    def joint(ids: frozenset[str]) -> float:
        return 0.0 if {"m1", "m3"} <= ids else 1.0

    prior = PriorCandidate(ids=("m3", "m1"), unproven=("m3", "m1"))
    warm, _ = run(joint, prior=prior)
    assert warm.cleared_ids == ["m1", "m3"]
    assert [(c.memory_ids, c.recovered) for c in warm.candidates[2:]] == [
        (["m3"], True),  # retrieval order: m1 back first
        (["m1"], True),
    ]


def test_a_failing_union_skips_the_put_backs_and_runs_the_full_algorithm() -> None:
    cold, cold_calls = run(redundant_value)
    prior = PriorCandidate(ids=("m1",), unproven=("m1",))
    warm, warm_calls = run(redundant_value, prior=prior)
    assert warm.clearance_search != "prior" and warm.cleared_ids == cold.cleared_ids
    assert len(warm_calls.calls) <= len(cold_calls.calls) + VERIFIED


def test_unproven_ids_outside_the_candidate_are_ignored() -> None:
    prior = PriorCandidate(ids=("m1", "m3"), unproven=("m0", "elsewhere"))
    warm, calls = run(direct_value, prior=prior)
    assert len(warm.candidates) == 2 and len(calls.calls) == T + VERIFIED


def test_put_back_under_the_papers_rule() -> None:
    config = ClearanceConfig.paper().model_copy(update={"early_exit": True})
    prior = PriorCandidate(ids=("m1", "m3"), unproven=("m1", "m3"))
    warm, _ = run(direct_value, prior=prior, config=config)
    assert warm.clearance_search == "prior" and warm.cleared_ids == ["m1", "m3"]
    assert [(c.memory_ids, c.recovered) for c in warm.candidates[2:]] == [
        (["m3"], True),
        (["m1"], False),  # m3 back: fails every trial, its removal was needed
    ]


def test_put_back_events_and_async_path() -> None:
    prior = PriorCandidate(ids=("m1", "m3"), unproven=("m1",))
    events: list[StageEvent] = []
    sync, _ = run(direct_value, prior=prior, events=events.append)
    start, end = [e for e in events if e.phase != "progress"][2:4]
    assert start.payload["candidates"] == [[], ["m1", "m3"], ["m3"]]
    assert end.payload["selected_index"] == 1 and end.payload["cleared_ids"] == ["m1", "m3"]

    async def evaluate(coalition, trial):
        return direct_value(frozenset(m.id for m in coalition))

    report = asyncio.run(
        MeClearEngine(ClearanceConfig()).aclear(make_memories(5), evaluate, prior_harmful=prior)
    )
    assert summary(report) == summary(sync)
    assert report.cost.evaluator_calls == sync.cost.evaluator_calls
