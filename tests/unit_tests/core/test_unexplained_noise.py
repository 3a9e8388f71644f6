"""The unexplained check under a judge that contradicts itself (a noisy judge), with
``EarlyStops.pooled_verdicts`` (opt-in) and without it (the default, unchanged)."""

from __future__ import annotations

from meclear_integrations.core import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.answers import note_answer
from meclear_integrations.simulation.evaluator import SimulatedEvaluator
from meclear_integrations.simulation.world import EvidenceWorld

MEMORIES = [Memory(id=f"m{i}", content=f"memory {i}") for i in range(8)]
POOLED = ClearanceConfig(stops={"pooled_verdicts": True})


def test_a_flipped_verdict_on_the_failing_answer_does_not_keep_the_run_going() -> None:
    """No memory states the reference; one trial of "Rome" is judged right by mistake."""
    world = EvidenceWorld.from_claims({"m3": ("Rome", 1.0), "m6": ("Rome", 0.2)}, ties="prompt")
    honest = SimulatedEvaluator(world, "Paris")
    flipped: list[int] = []

    def noisy(coalition: tuple[Memory, ...], trial: int) -> float:
        score = honest(coalition, trial)
        ids = {m.id for m in coalition}
        if ids == {m.id for m in MEMORIES} - {"m0"} and not flipped:
            flipped.append(trial)
            note_answer("Rome")
            return 1.0  # the judge passes the failing answer once
        return score

    report = MeClearEngine(POOLED).clear(MEMORIES, noisy)
    clean = MeClearEngine(POOLED).clear(MEMORIES, honest)
    assert clean.status_reason == "no_memory_explains_failure"
    assert report.status == "skipped" and report.status_reason == "no_memory_explains_failure"
    assert report.cleared == []
    assert report.cost.evaluator_calls <= clean.cost.evaluator_calls + 1
    # the default reads each pass as it comes: the flipped verdict keeps the run going
    flipped.clear()
    default = MeClearEngine(ClearanceConfig()).clear(MEMORIES, noisy)
    assert default.status_reason != "no_memory_explains_failure"
    assert default.cost.evaluator_calls > clean.cost.evaluator_calls + 1


def test_a_flipped_singleton_does_not_leave_a_copy_in_the_context_asked() -> None:
    """Two copies of "Rome" mask each other beside the gold m1 ("Paris").

    The judge contradicts itself on the singletons: m6 alone ("Rome") is judged right and
    m1 alone ("Paris") wrong. The context without both copies still recovers, and the
    check must ask it (m6 is a copy: the judge fails "Rome" everywhere else).
    """
    world = EvidenceWorld.from_claims(
        {"m1": ("Paris", 1.0), "m3": ("Rome", 1.6), "m6": ("Rome", 1.7)},
        ties="prompt",
        abstain_weight=0.5,
    )
    honest = SimulatedEvaluator(world, "Paris")

    def noisy(coalition: tuple[Memory, ...], trial: int) -> float:
        ids = [m.id for m in coalition]
        if ids == ["m6"]:
            note_answer("Rome")
            return 1.0
        if ids == ["m1"]:
            note_answer("Paris")
            return 0.0
        return honest(coalition, trial)

    report = MeClearEngine(POOLED).clear(MEMORIES, noisy)
    assert report.status != "skipped"
    assert report.recovered
    assert sorted(report.cleared_ids) == ["m3", "m6"]


def test_two_wrong_answers_and_no_gold_still_stop() -> None:
    """Nothing states Paris: the run stops as before."""
    world = EvidenceWorld.from_claims({"m3": ("Rome", 1.6), "m6": ("Berlin", 1.3)}, ties="prompt")
    for config in (ClearanceConfig(), POOLED):
        report = MeClearEngine(config).clear(MEMORIES, SimulatedEvaluator(world, "Paris"))
        assert report.status == "skipped"
        assert report.status_reason == "no_memory_explains_failure"
        assert report.cleared == []
