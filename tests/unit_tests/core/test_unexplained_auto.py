"""stops.unexplained="auto": stop only when the whole screening batch and a cheap check fail."""

from __future__ import annotations

import asyncio

import pytest

from meclear_integrations.core import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.answers import note_answer
from meclear_integrations.simulation.evaluator import SimulatedEvaluator
from meclear_integrations.simulation.world import EvidenceWorld

MEMORIES = [Memory(id=f"m{i}", content=f"memory {i}") for i in range(10)]
AUTO = ClearanceConfig(stops={"unexplained": "auto"})
OFF = ClearanceConfig(stops={"unexplained": False})


def loo_calls(k: int, trials: int = 2) -> int:
    """What LOO pays: the baseline's trials and one call per memory left out."""
    return trials + k


def screening_calls(k: int) -> int:
    """What the default run pays up to the end of screening on a failing context."""
    calls = 0

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        nonlocal calls
        calls += 1
        note_answer("Rome" if any(m.id == "m3" for m in coalition) else "unknown")
        return 0.0

    events = []
    seen: list[int] = []
    engine = MeClearEngine(OFF, listener=events.append)

    def counted(coalition: tuple[Memory, ...], trial: int) -> float:
        if not any(e.stage == "screening" and e.phase == "end" for e in events):
            seen.append(1)
        return evaluate(coalition, trial)

    engine.clear(MEMORIES[:k], counted)
    return len(seen)


def unexplained_world() -> SimulatedEvaluator:
    """No memory states the reference; two memories push wrong answers."""
    world = EvidenceWorld.from_claims({"m3": ("Rome", 1.0), "m7": ("Berlin", 0.8)}, ties="prompt")
    return SimulatedEvaluator(world, "Paris")


def joint_pair(coalition: tuple[Memory, ...], trial: int) -> float:
    """Right ("Paris") only with m0 AND m1 and none of the copies m2..m6 ("Rome").

    Neither m0 nor m1 answers right alone; every copy alone answers "Rome"; the copies
    sit beside the pair so no removal of whole screening groups recovers.
    """
    ids = {m.id for m in coalition}
    if ids & {"m2", "m3", "m4", "m5", "m6"}:
        note_answer("Rome")
        return 0.0
    if {"m0", "m1"} <= ids:
        note_answer("Paris")
        return 1.0
    note_answer("unknown")
    return 0.0


JOINT = [Memory(id=f"m{i}", content=f"memory {i}") for i in (0, 2, 1, 3, 4, 5, 6, 7, 8, 9)]


def test_auto_stops_an_unexplained_context() -> None:
    evaluate = unexplained_world()
    stopped = MeClearEngine(AUTO).clear(MEMORIES, evaluate)
    full = MeClearEngine(OFF).clear(MEMORIES, evaluate)
    assert stopped.status == "skipped"
    assert stopped.status_reason == "no_memory_explains_failure"
    assert stopped.kept_ids == [m.id for m in MEMORIES] and stopped.cleared == []
    # the screening batch, each memory alone, no memory and one check: nothing else
    k = len(MEMORIES)
    assert stopped.cost.evaluator_calls <= screening_calls(k) + k + 2
    assert full.cost.evaluator_calls > 3 * stopped.cost.evaluator_calls  # what it saves


@pytest.mark.parametrize("k", [10, 20])
def test_auto_cost_against_loo(k: int) -> None:
    """The documented cost: within 2x LOO's calls plus the screening batch's fixed part."""
    memories = [Memory(id=f"m{i}", content=f"memory {i}") for i in range(k)]
    report = MeClearEngine(AUTO).clear(memories, unexplained_world())
    assert report.status_reason == "no_memory_explains_failure"
    assert report.cost.evaluator_calls <= 2 * loo_calls(k) + screening_calls(k) - k


@pytest.mark.parametrize(("k", "ratio"), [(5, 1.5), (10, 1.6), (20, 1.5)])
def test_auto_probe_costs_at_most_one_and_a_half_loo(k: int, ratio: float) -> None:
    """The probe (plan coalitions first) stops an unexplained context near LOO's cost.

    K = 10 is attributed hierarchically: its probe (no memory and the five unions of all
    blocks but one) costs six calls before the K + 2 of the confirmation: 19 against 12.
    """
    memories = [Memory(id=f"m{i}", content=f"memory {i}") for i in range(k)]
    report = MeClearEngine(ClearanceConfig()).clear(memories, unexplained_world())
    assert report.status == "skipped"
    assert report.status_reason == "no_memory_explains_failure"
    assert report.cost.evaluator_calls <= ratio * loo_calls(k)


def test_auto_probe_leaves_faulty_contexts_to_attribution() -> None:
    """A fault the probe can explain is cleared as before, at no extra call."""
    world = EvidenceWorld.from_claims({"m1": ("Paris", 1.0), "m4": ("Rome", 1.3)}, ties="prompt")
    on = MeClearEngine(ClearanceConfig()).clear(MEMORIES, SimulatedEvaluator(world, "Paris"))
    off = MeClearEngine(OFF).clear(MEMORIES, SimulatedEvaluator(world, "Paris"))
    assert on.recovered and on.cleared_ids == ["m4"] == off.cleared_ids
    assert on.cost.evaluator_calls == off.cost.evaluator_calls


def test_auto_async_stops_too() -> None:
    sync_eval = unexplained_world()

    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        return sync_eval(coalition, trial)

    report = asyncio.run(MeClearEngine(AUTO).aclear(MEMORIES, evaluate))
    same = MeClearEngine(AUTO).clear(MEMORIES, sync_eval)
    assert report.status_reason == "no_memory_explains_failure"
    assert report.cost.evaluator_calls == same.cost.evaluator_calls


@pytest.mark.parametrize("mode", ["auto", True])
def test_a_joint_pair_context_goes_on(mode: bool | str) -> None:
    """A right answer that two memories support together: the stop must not fire."""
    cfg = ClearanceConfig(stops={"unexplained": mode})
    report = MeClearEngine(cfg).clear(JOINT, joint_pair)
    assert report.status == "complete" and report.recovered
    assert set(report.cleared_ids) == {"m2", "m3", "m4", "m5", "m6"}
    # the control: without m1 the pair is broken and nothing recovers; the run stops
    broken = [m for m in JOINT if m.id != "m1"]
    stopped = MeClearEngine(cfg).clear(broken, joint_pair)
    assert stopped.status_reason == "no_memory_explains_failure"


def test_auto_keeps_a_joint_pair_context_async() -> None:
    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        return joint_pair(coalition, trial)

    report = asyncio.run(MeClearEngine(AUTO).aclear(JOINT, evaluate))
    assert report.status == "complete" and report.recovered


def test_auto_costs_nothing_when_screening_recovers() -> None:
    """An ordinary harm (removing it recovers): the same calls as with the stop off."""
    world = EvidenceWorld.from_claims(
        {"m1": ("Paris", 1.0), "m2": ("Rome", 1.2), "m5": ("Rome", 0.4)}, ties="prompt"
    )
    evaluate = SimulatedEvaluator(world, "Paris")
    auto = MeClearEngine(AUTO).clear(MEMORIES, evaluate)
    off = MeClearEngine(OFF).clear(MEMORIES, evaluate)
    assert auto.status == "complete" and auto.recovered
    assert auto.cost.evaluator_calls == off.cost.evaluator_calls
    assert auto.cleared_ids == off.cleared_ids


def test_auto_model_that_cannot_answer() -> None:
    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        note_answer("I don't know.")
        return 0.0

    cfg = ClearanceConfig(stops={"unexplained": "auto", "cannot_answer": False})
    report = MeClearEngine(cfg).clear(MEMORIES, evaluate)
    assert report.status == "skipped" and report.status_reason == "model_cannot_answer"


def test_auto_goes_on_when_a_memory_answers_alone() -> None:
    """The gold shares its screening group with a copy; alone it answers right."""

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        ids = {m.id for m in coalition}
        if ids & {"m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"}:
            note_answer("Rome")
            return 0.0
        if "m0" in ids:
            note_answer("Paris")
            return 1.0
        note_answer("unknown")
        return 0.0

    report = MeClearEngine(AUTO).clear(JOINT, evaluate)
    assert report.status_reason != "no_memory_explains_failure"
