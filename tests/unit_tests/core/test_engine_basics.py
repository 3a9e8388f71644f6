"""Engine contract: caching, errors, empty input, events, report round-trip."""

from __future__ import annotations

import asyncio

import pytest

from meclear_integrations import (
    ClearanceConfig,
    ClearanceReport,
    ConfigurationError,
    DuplicateMemoryError,
    EvaluatorError,
    MeClearEngine,
    Memory,
    ScoreOutOfRangeError,
    StageEvent,
)
from meclear_integrations.core import ExactShapley, PermutationShapley
from tests.support.games import CountingEvaluator, make_memories
from tests.support.progress import check_progress


def redundant_value(ids: frozenset[str]) -> float:
    """m0 supports the answer; m1 and m2 each alone override it (redundant harm)."""
    return 1.0 if "m0" in ids and not ids & {"m1", "m2"} else 0.0


@pytest.mark.parametrize("estimator", ["permutation", "exact"])
def test_no_coalition_is_evaluated_twice(estimator: str) -> None:
    evaluate = CountingEvaluator(redundant_value)
    config = ClearanceConfig.paper(estimator=estimator, trials=3, interactions=True)
    report = MeClearEngine(config).clear(make_memories(5), evaluate)
    assert len(evaluate.calls) == len(set(evaluate.calls))
    assert report.cost.evaluator_calls == len(evaluate.calls)
    coalitions = {ids for ids, _ in evaluate.calls}
    assert report.cost.coalitions == len(coalitions)
    assert report.cost.evaluator_calls == 3 * report.cost.coalitions
    assert {t for _, t in evaluate.calls} == {0, 1, 2}
    if estimator == "exact":
        assert report.cost.coalitions == 32


def test_trials_are_averaged_and_recovery_needs_every_trial() -> None:
    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        ids = {m.id for m in coalition}
        if "m1" in ids:
            return 0.0
        return 1.0 if trial == 0 or "m2" not in ids else 0.0

    report = MeClearEngine(ClearanceConfig.paper(estimator="exact", trials=2)).clear(
        make_memories(3), evaluate
    )
    # Clearing m1 alone gives v = 0.5 (1 of 2 trials): positive gain but not recovered.
    candidates = {tuple(c.memory_ids): c for c in report.candidates}
    assert report.baseline_value == 0.0
    assert report.cleared_ids == ["m1", "m2"]
    assert report.recovered
    first = candidates[("m1",)]
    assert first.value == 0.5 and first.gain == 0.5 and not first.recovered
    assert not first.admissible


def test_empty_context_is_a_noop() -> None:
    evaluate = CountingEvaluator(redundant_value)
    report = MeClearEngine().clear([], evaluate)
    assert evaluate.calls == []
    assert report.kept == [] and report.cleared == [] and report.candidates == []
    assert report.baseline_value is None and report.cost.evaluator_calls == 0


def test_duplicate_ids_raise() -> None:
    memories = [Memory(id="a", content="x"), Memory(id="a", content="y")]
    with pytest.raises(DuplicateMemoryError, match="duplicate memory ids"):
        MeClearEngine().clear(memories, lambda c, t: 1.0)


def test_non_memory_items_raise() -> None:
    with pytest.raises(ConfigurationError, match="expected Memory"):
        MeClearEngine().clear(["just text"], lambda c, t: 1.0)  # type: ignore[list-item]


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan"), "high", None, True])
def test_out_of_range_scores_raise(bad: object) -> None:
    with pytest.raises(ScoreOutOfRangeError, match=r"scores must be numbers in \[0, 1\]"):
        MeClearEngine(ClearanceConfig(failure={"mode": "closed"})).clear(
            make_memories(3),
            lambda c, t: bad,  # type: ignore[arg-type,return-value]
        )


def test_evaluator_exception_names_the_coalition() -> None:
    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        if len(coalition) == 2:
            raise RuntimeError("model exploded")
        return 1.0

    with pytest.raises(EvaluatorError) as info:
        MeClearEngine(
            ClearanceConfig.paper(
                budget={"max_concurrency": 1},
                failure={"mode": "closed"},
            )
        ).clear(make_memories(3), evaluate)
    assert "model exploded" in str(info.value)
    assert len(info.value.coalition) == 2
    assert all(mid.startswith("m") for mid in info.value.coalition)
    assert isinstance(info.value.__cause__, RuntimeError)


async def test_async_evaluator_exception_names_the_coalition() -> None:
    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        await asyncio.sleep(0)
        if {m.id for m in coalition} == {"m0", "m2"}:
            raise TimeoutError("slow model")
        return 0.5

    expected = r"TimeoutError: slow model on coalition \['m0', 'm2'\]"
    with pytest.raises(EvaluatorError, match=expected):
        await MeClearEngine(
            ClearanceConfig(
                failure={"mode": "closed", "retry": {"max_attempts": 1}},
            )
        ).aclear(make_memories(3), evaluate)


def test_exact_refuses_large_k() -> None:
    config = ClearanceConfig(estimator=ExactShapley(max_memories=4))
    with pytest.raises(ConfigurationError, match=r"ExactShapley\(max_memories=4\)"):
        MeClearEngine(config).clear(make_memories(5), lambda c, t: 1.0)


def test_invalid_config_names_the_field() -> None:
    with pytest.raises(ValueError, match="permutations"):
        PermutationShapley(permutations=0)
    with pytest.raises(ValueError, match=r"PermutationShapley\(permutations=\.\.\.\)"):
        ClearanceConfig(permutations=16)  # moved onto the estimator
    with pytest.raises(ValueError, match="harm_tolerance"):
        ClearanceConfig(harm_tolerance=-1)
    with pytest.raises(ValueError, match="estimatr"):
        ClearanceConfig(estimatr="exact")  # type: ignore[call-arg]


def test_report_json_round_trip() -> None:
    report = MeClearEngine(ClearanceConfig(interactions=True)).clear(
        make_memories(4), CountingEvaluator(redundant_value)
    )
    again = ClearanceReport.model_validate_json(report.model_dump_json())
    assert again == report
    assert "clearance candidates" in report.to_table()


def test_inputs_are_not_modified() -> None:
    memories = [Memory(id=f"m{i}", content=f"text {i}", metadata={"n": i}) for i in range(4)]
    snapshot = [m.model_dump_json() for m in memories]
    MeClearEngine().clear(memories, CountingEvaluator(redundant_value))
    assert [m.model_dump_json() for m in memories] == snapshot


def test_sync_clear_accepts_a_coroutine_evaluator() -> None:
    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        return redundant_value(frozenset(m.id for m in coalition))

    report = MeClearEngine(ClearanceConfig(estimator="exact")).clear(make_memories(4), evaluate)
    assert report.cleared_ids == ["m1", "m2"]


async def test_sync_clear_inside_a_running_loop_points_to_aclear() -> None:
    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        return 1.0

    with pytest.raises(ConfigurationError, match="aclear"):
        MeClearEngine().clear(make_memories(2), evaluate)


def test_stage_events_come_in_start_end_pairs() -> None:
    events: list[StageEvent] = []
    MeClearEngine(ClearanceConfig(interactions=True), listener=events.append).clear(
        make_memories(4), CountingEvaluator(redundant_value)
    )
    stages = [e for e in events if e.phase != "progress"]
    assert [(e.stage, e.phase) for e in stages] == [
        ("screening", "start"),
        ("screening", "end"),
        ("attribution", "start"),
        ("attribution", "end"),
        ("interactions", "start"),
        ("interactions", "end"),
        ("clearance", "start"),
        ("clearance", "end"),
    ]
    end = stages[-1].payload
    assert end["cleared_ids"] == ["m1", "m2"] and end["recovered"] is True
    assert set(stages[3].payload["shapley"]) == {"m0", "m1", "m2", "m3"}
    assert check_progress([(e.stage, e.phase, e.payload) for e in events])


async def test_error_closes_the_open_stage_async() -> None:
    events: list[StageEvent] = []

    async def listener(event: StageEvent) -> None:
        events.append(event)

    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        if len(coalition) == 1:  # only the attribution stage asks for singletons
            raise ValueError("bad judge output")
        return 1.0

    with pytest.raises(EvaluatorError):
        await MeClearEngine(
            ClearanceConfig.paper(failure={"mode": "closed"}), listener=listener
        ).aclear(make_memories(3), evaluate)
    assert [(e.stage, e.phase) for e in events if e.phase != "progress"] == [
        ("screening", "start"),
        ("screening", "end"),
        ("attribution", "start"),
        ("attribution", "error"),
    ]
    assert events[-1].payload["error_type"] == "EvaluatorError"
    assert events[-2].phase == "progress" and events[-2].stage == "attribution"


def test_failing_listener_does_not_break_clearance() -> None:
    def listener(event: StageEvent) -> None:
        raise RuntimeError("handler bug")

    report = MeClearEngine(ClearanceConfig(estimator="exact"), listener=listener).clear(
        make_memories(3), CountingEvaluator(redundant_value)
    )
    assert report.cleared_ids == ["m1", "m2"]


def test_same_seed_same_report() -> None:
    evaluate = CountingEvaluator(redundant_value)
    a = MeClearEngine(ClearanceConfig(seed=7)).clear(make_memories(6), evaluate)
    b = MeClearEngine(ClearanceConfig(seed=7)).clear(make_memories(6), evaluate)
    assert [x.shapley for x in a.attributions] == [x.shapley for x in b.attributions]
