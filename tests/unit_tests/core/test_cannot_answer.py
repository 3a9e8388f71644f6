"""stops.cannot_answer (on by default): a model that cannot answer stops after screening."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from meclear_integrations.core import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.answers import note_answer
from meclear_integrations.simulation.evaluator import SimulatedEvaluator
from meclear_integrations.simulation.world import EvidenceWorld

MEMORIES = [Memory(id=f"m{i}", content=f"memory {i}") for i in range(10)]


class Silent:
    """An agent that says "I don't know" on every context (sizes of contexts asked)."""

    def __init__(self) -> None:
        self.sizes: Counter[int] = Counter()

    def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        self.sizes[len(coalition)] += 1
        note_answer("I don't know.")
        return 0.0


def test_default_detects_a_model_that_cannot_answer() -> None:
    silent = Silent()
    report = MeClearEngine(ClearanceConfig()).clear(MEMORIES, silent)
    assert report.status == "skipped" and report.status_reason == "model_cannot_answer"
    assert report.cleared == [] and report.kept_ids == [m.id for m in MEMORIES]
    assert silent.sizes[0] == 1  # the one extra call: no memory
    off = Silent()
    paid = MeClearEngine(
        ClearanceConfig(stops={"cannot_answer": False, "unexplained": False})
    ).clear(MEMORIES, off)
    assert paid.status_reason != "model_cannot_answer"
    assert report.cost.evaluator_calls < paid.cost.evaluator_calls  # what the default saves


def test_screening_batch_only_plus_one_call() -> None:
    silent = Silent()
    report = MeClearEngine(ClearanceConfig()).clear(MEMORIES, silent)
    # the full context's trials, the screening batch (one_batch: the attribution plan
    # joins it), one empty call, nothing after
    off = Silent()
    MeClearEngine(ClearanceConfig(stops={"cannot_answer": False, "unexplained": False})).clear(
        MEMORIES, off
    )
    assert silent.sizes[len(MEMORIES)] == report.config.trials
    assert silent.sizes[0] == 1
    assert sum(silent.sizes.values()) < sum(off.sizes.values())
    assert report.cost.evaluator_calls == sum(silent.sizes.values())


def test_a_failing_answer_the_memories_cause_goes_on_at_one_call() -> None:
    """Every screening answer is "Rome" (three copies), but no memory says "I don't know"."""
    world = EvidenceWorld.from_claims(
        {"m1": ("Paris", 1.0), "m2": ("Rome", 1.0), "m5": ("Rome", 1.0), "m7": ("Rome", 1.0)},
        ties="prompt",
    )
    evaluate = SimulatedEvaluator(world, "Paris")
    on = MeClearEngine(ClearanceConfig()).clear(MEMORIES, evaluate)
    off = MeClearEngine(ClearanceConfig(stops={"cannot_answer": False})).clear(MEMORIES, evaluate)
    assert on.status_reason != "model_cannot_answer"
    assert on.cleared_ids == off.cleared_ids and on.recovered == off.recovered
    assert on.cost.evaluator_calls - off.cost.evaluator_calls <= 1


def test_no_call_when_answers_differ_or_are_not_reported() -> None:
    world = EvidenceWorld.from_claims(
        {"m1": ("Paris", 1.0), "m2": ("Rome", 1.0), "m5": ("Rome", 1.0)}, ties="prompt"
    )
    evaluate = SimulatedEvaluator(world, "Paris")
    on = MeClearEngine(ClearanceConfig()).clear(MEMORIES, evaluate)
    off = MeClearEngine(ClearanceConfig(stops={"cannot_answer": False})).clear(MEMORIES, evaluate)
    assert on.cost.evaluator_calls == off.cost.evaluator_calls
    assert on.cleared_ids == off.cleared_ids and on.recovered
    assert on.cleared_ids and set(on.cleared_ids) <= {"m2", "m5"}

    def mute(coalition: tuple[Memory, ...], trial: int) -> float:
        return 0.0  # fails everywhere, but reports no answer: nothing to decide on

    quiet = MeClearEngine(ClearanceConfig()).clear(MEMORIES, mute)
    assert quiet.status_reason != "model_cannot_answer"


def test_same_answer_but_not_without_memories_goes_on() -> None:
    """Failing with one answer that the empty context does not give: memories matter."""

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        note_answer("Rome" if coalition else "I don't know.")
        return 0.0

    report = MeClearEngine(ClearanceConfig()).clear(MEMORIES, evaluate)
    assert report.status_reason != "model_cannot_answer"


@pytest.mark.parametrize("settings", [{}, {"one_batch": False, "estimator": "permutation"}])
def test_async_path_detects_too(settings: dict[str, object]) -> None:
    silent = Silent()

    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        return silent(coalition, trial)

    report = asyncio.run(MeClearEngine(ClearanceConfig(**settings)).aclear(MEMORIES, evaluate))
    assert report.status_reason == "model_cannot_answer"
    assert silent.sizes[0] == 1
