"""stops.unexplained: a failure no memory explains stops after the baseline trials."""

from __future__ import annotations

import asyncio

from meclear_integrations.core import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.answers import note_answer
from meclear_integrations.simulation.evaluator import SimulatedEvaluator
from meclear_integrations.simulation.world import EvidenceWorld

MEMORIES = [Memory(id=f"m{i}", content=f"memory {i}") for i in range(10)]


def loo_calls(k: int, trials: int = 2) -> int:
    """What LOO pays: the baseline's trials and one call per memory left out."""
    return trials + k


def test_no_memory_explains_failure_stops_cheaply() -> None:
    world = EvidenceWorld.from_claims({"m3": ("Rome", 1.0)}, ties="prompt")
    evaluate = SimulatedEvaluator(world, "Paris")
    stopped = MeClearEngine(ClearanceConfig(stops={"unexplained": True})).clear(MEMORIES, evaluate)
    full = MeClearEngine(ClearanceConfig(stops={"unexplained": False})).clear(MEMORIES, evaluate)
    assert stopped.status == "skipped"
    assert stopped.status_reason == "no_memory_explains_failure"
    assert stopped.kept_ids == [m.id for m in MEMORIES] and stopped.cleared == []
    assert not stopped.recovered
    assert stopped.cost.evaluator_calls <= 2 * loo_calls(len(MEMORIES))
    assert full.cost.evaluator_calls > 4 * stopped.cost.evaluator_calls  # what it saves


def test_model_that_cannot_answer_is_detected() -> None:
    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        note_answer("I don't know.")
        return 0.0

    report = MeClearEngine(ClearanceConfig(stops={"unexplained": True})).clear(MEMORIES, evaluate)
    assert report.status == "skipped" and report.status_reason == "model_cannot_answer"
    assert report.cost.evaluator_calls <= 2 * loo_calls(len(MEMORIES))


def test_a_memory_that_answers_alone_goes_on() -> None:
    world = EvidenceWorld.from_claims(
        {"m1": ("Paris", 1.0), "m2": ("Rome", 1.0), "m5": ("Rome", 1.0)}, ties="prompt"
    )
    report = MeClearEngine(ClearanceConfig(stops={"unexplained": True})).clear(
        MEMORIES, SimulatedEvaluator(world, "Paris")
    )
    assert report.status == "complete" and report.recovered
    assert report.cleared_ids and set(report.cleared_ids) <= {"m2", "m5"}


def test_a_context_that_sometimes_passes_goes_on() -> None:
    """A baseline trial that passes means something in the context can answer."""

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        ids = {m.id for m in coalition}
        if "m0" in ids and "m9" not in ids:
            return 1.0
        return 1.0 if len(ids) == 10 and trial == 1 else 0.0

    report = MeClearEngine(ClearanceConfig(stops={"unexplained": True})).clear(MEMORIES, evaluate)
    assert report.status_reason not in ("no_memory_explains_failure", "model_cannot_answer")


def test_events_close_every_stage() -> None:
    events = []
    world = EvidenceWorld.from_claims({"m3": ("Rome", 1.0)}, ties="prompt")
    engine = MeClearEngine(ClearanceConfig(stops={"unexplained": True}), listener=events.append)
    engine.clear(MEMORIES, SimulatedEvaluator(world, "Paris"))
    phases = [(e.stage, e.phase) for e in events if e.phase != "progress"]
    assert phases == [
        ("screening", "start"),
        ("screening", "end"),
        ("clearance", "start"),
        ("clearance", "end"),
    ]
    end = next(e for e in events if e.stage == "screening" and e.phase == "end")
    assert end.payload["stopped"] == "no_memory_explains_failure"


def test_async_path_stops_too() -> None:
    world = EvidenceWorld.from_claims({"m3": ("Rome", 1.0)}, ties="prompt")
    sync_eval = SimulatedEvaluator(world, "Paris")

    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        return sync_eval(coalition, trial)

    report = asyncio.run(
        MeClearEngine(ClearanceConfig(stops={"unexplained": True})).aclear(MEMORIES, evaluate)
    )
    assert report.status_reason == "no_memory_explains_failure"
