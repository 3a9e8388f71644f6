"""Model round trips on the real clock: a latency evaluator's call start order shows that one
batch is one round trip (screening and attribution together, verification in one round)."""

from __future__ import annotations

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine
from tests.support.games import make_memories
from tests.support.round_trips import WaveClock, joint, redundant


@pytest.mark.parametrize(
    ("config", "rounds"),
    [
        # baseline (early exit check), the unexplained probe (no memory, each memory
        # alone: part of the exact table), the rest of the table, one verification batch
        (ClearanceConfig(budget={"max_concurrency": 64}), 4),
        # the same without the probe: one attribution batch
        (ClearanceConfig(budget={"max_concurrency": 64}, stops={"unexplained": False}), 3),
        # no early exit, one batch: attribution batch, then verification
        (ClearanceConfig(budget={"max_concurrency": 64}, early_exit=False), 2),
        # the paper's stage-by-stage evaluation: screening, attribution (candidates cached)
        (ClearanceConfig.paper(budget={"max_concurrency": 64}, estimator="exact"), 2),
    ],
)
async def test_one_batch_round_trips(config: ClearanceConfig, rounds: int) -> None:
    clock = WaveClock(redundant, delay=0.2)  # robust to a loaded machine
    report = await MeClearEngine(config).aclear(make_memories(5), clock)
    assert clock.waves() == rounds == report.cost.rounds
    assert report.cleared_ids == ["m1", "m2"]


async def test_one_batch_sends_screening_and_attribution_together() -> None:
    clock = WaveClock(redundant, delay=0.2)
    config = ClearanceConfig(estimator="exact", budget={"max_concurrency": 64}, early_exit=False)
    report = await MeClearEngine(config).aclear(make_memories(5), clock)
    # 32 coalitions (+ the baseline's second trial) in one wave, then one verification: two
    # waves of calls in flight together; sequential evaluation would take 33.
    assert report.cost.rounds == 2 == clock.waves()


@pytest.mark.parametrize("k", [5, 8])
async def test_verification_is_one_round_when_a_known_candidate_recovers(k: int) -> None:
    """Joint harm: clearing m1 alone (a leave-one-out coalition, already evaluated once)
    recovers, and the nested candidate {m1, m2} is new to the table. Both get their
    trials in the same verification batch (the sequential rule: the two would tie, so
    both go straight to max_trials before the tie is broken by index). Four round-trips:
    the exit test, the unexplained probe (no memory and each memory alone, coalitions of
    the KernelSHAP plan: ``stops.unexplained="auto"``), the rest of the screening batch,
    and the verification; three without the probe."""
    clock = WaveClock(joint, delay=0.1)
    config = ClearanceConfig(budget={"max_concurrency": 256}, estimator="kernel")
    report = await MeClearEngine(config).aclear(make_memories(k), clock)
    assert report.harmful_ids[:2] in (["m1", "m2"], ["m2", "m1"])
    assert len(report.cleared) == 1 and report.cleared_ids[0] in {"m1", "m2"}
    assert report.recovered and report.candidates[1].trials == config.verification.max_trials
    assert clock.waves() == 4 == report.cost.rounds
    off = ClearanceConfig(
        budget={"max_concurrency": 256}, estimator="kernel", stops={"unexplained": False}
    )
    clock = WaveClock(joint, delay=0.1)
    unprobed = await MeClearEngine(off).aclear(make_memories(k), clock)
    assert clock.waves() == 3 == unprobed.cost.rounds
    assert unprobed.cost.evaluator_calls == report.cost.evaluator_calls
