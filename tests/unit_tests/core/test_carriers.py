"""Carriers of a verified harm (core.stages.carriers) and clearance_scope="complete"."""

from __future__ import annotations

import asyncio

import pytest

from meclear_integrations.core import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.answers import note_answer
from meclear_integrations.simulation.evaluator import SimulatedEvaluator
from meclear_integrations.simulation.world import EvidenceWorld

ORDER = ["g", "b1", "p0", "p1", "b2", "p2", "p3", "p4", "b3", "b4"]
MEMORIES = [Memory(id=x, content=f"memory {x}") for x in ORDER]
POISONS = ["p0", "p1", "p2", "p3", "p4"]


def redundant_world() -> EvidenceWorld:
    """Five copies of one wrong claim, of unequal strength; one gold memory."""
    weights = [1.0, 0.8, 0.5, 0.3, 0.2]
    claims = {"g": ("Paris", 1.5)} | {p: ("Rome", w) for p, w in zip(POISONS, weights, strict=True)}
    return EvidenceWorld.from_claims(claims, ties="prompt")


def test_minimal_reports_every_copy_as_carrier_or_cleared() -> None:
    report = MeClearEngine(ClearanceConfig(find_carriers=True)).clear(
        MEMORIES, SimulatedEvaluator(redundant_world(), "Paris")
    )
    assert report.recovered
    assert report.carrier_status == "found"
    assert sorted(report.cleared_ids + report.carrier_ids) == POISONS
    assert not set(report.cleared_ids) & set(report.carrier_ids)
    # minimal: the carriers stay in the context, only reported
    assert set(report.carrier_ids) <= set(report.kept_ids)
    assert not any(c.withheld for c in report.carriers)
    for c in report.carriers:
        assert c.answer == "Rome" and c.harmful_answer == "Rome" and c.score == 0.0
        assert ORDER[c.position] == c.memory_id
    # at most one call per kept memory plus the control (none here: the unexplained
    # probe's confirmation already asked every memory alone)
    assert 0 <= report.cost.carrier_calls <= len(report.kept) + 1
    assert report.cost.evaluator_calls >= report.cost.carrier_calls


def test_off_by_default_and_minimal_unchanged() -> None:
    evaluate = SimulatedEvaluator(redundant_world(), "Paris")
    plain = MeClearEngine(ClearanceConfig(stops={"unexplained": False})).clear(MEMORIES, evaluate)
    found = MeClearEngine(ClearanceConfig(find_carriers=True, stops={"unexplained": False})).clear(
        MEMORIES, evaluate
    )
    assert plain.carrier_status is None and plain.carriers == [] and plain.cost.carrier_calls == 0
    assert found.kept_ids == plain.kept_ids and found.cleared_ids == plain.cleared_ids
    assert found.cost.evaluator_calls == plain.cost.evaluator_calls + found.cost.carrier_calls


def test_default_reports_carriers_its_unexplained_check_already_asked() -> None:
    """The default's probe found no anchor; the memories asked alone give the carriers free."""
    evaluate = SimulatedEvaluator(redundant_world(), "Paris")
    report = MeClearEngine(ClearanceConfig()).clear(MEMORIES, evaluate)
    assert report.recovered and report.carrier_status == "found"
    assert report.cost.carrier_calls == 0
    assert sorted(report.cleared_ids + report.carrier_ids) == POISONS


def test_complete_withholds_verified_carriers() -> None:
    evaluate = SimulatedEvaluator(redundant_world(), "Paris")
    report = MeClearEngine(ClearanceConfig(clearance_scope="complete")).clear(MEMORIES, evaluate)
    assert report.recovered and report.final_value == 1.0
    assert all(c.withheld for c in report.carriers)
    assert sorted(report.removed_ids) == POISONS
    assert report.withheld_ids == report.carrier_ids
    assert report.kept_ids == ["g", "b1", "b2", "b3", "b4"]
    assert {a.memory_id for a in report.attributions if a.cleared} == set(POISONS)
    assert not set(report.cleared_ids) & set(report.carrier_ids)


def test_complete_keeps_carriers_the_answer_needs() -> None:
    """A copy that alone gives the wrong answer but whose removal breaks the answer stays."""

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        ids = {m.id for m in coalition}
        if not ids:
            answer = "I don't know"
        elif "x" in ids and "g" not in ids:
            answer = "Rome"  # x alone carries the wrong answer
        elif "p" in ids:
            answer = "Rome"
        elif "g" in ids and "x" in ids:
            answer = "Paris"  # ... but the right answer needs x beside g
        else:
            answer = "Lyon"
        note_answer(answer)
        return 1.0 if answer == "Paris" else 0.0

    memories = [Memory(id=i, content=i) for i in ["g", "x", "p", "b"]]
    report = MeClearEngine(ClearanceConfig(clearance_scope="complete")).clear(memories, evaluate)
    assert report.cleared_ids == ["p"]
    assert report.carrier_ids == ["x"]
    assert not report.carriers[0].withheld
    assert "x" in report.kept_ids and report.recovered


def test_background_and_gold_are_never_carriers() -> None:
    evaluate = SimulatedEvaluator(redundant_world(), "Paris")
    report = MeClearEngine(ClearanceConfig(find_carriers=True)).clear(MEMORIES, evaluate)
    assert not {"g", "b1", "b2", "b3", "b4"} & set(report.carrier_ids)


def test_harm_by_abstention_names_no_carrier() -> None:
    """When the full context fails by giving the no-memory answer, no carrier is named."""

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        ids = {m.id for m in coalition}
        answer = "Paris" if ids == {"g"} or ids == {"g", "b"} else "I don't know"
        note_answer(answer)
        return 1.0 if answer == "Paris" else 0.0

    memories = [Memory(id=i, content=i) for i in ["g", "c", "b"]]
    report = MeClearEngine(ClearanceConfig(find_carriers=True)).clear(memories, evaluate)
    assert report.cleared_ids == ["c"]
    assert report.carrier_status == "harm_is_abstention" and report.carriers == []


def test_evaluator_without_answers_says_so() -> None:
    world = redundant_world()

    def score_only(coalition: tuple[Memory, ...], trial: int) -> float:
        answer = world.answer([m.id for m in coalition])
        return 1.0 if answer == "Paris" else 0.0

    report = MeClearEngine(ClearanceConfig(find_carriers=True)).clear(MEMORIES, score_only)
    assert report.carrier_status == "answers_not_reported"
    assert report.carriers == [] and report.cost.carrier_calls == 0


def test_async_path_finds_the_same_carriers() -> None:
    world = redundant_world()
    sync_eval = SimulatedEvaluator(world, "Paris")

    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        await asyncio.sleep(0)
        return sync_eval(coalition, trial)

    config = ClearanceConfig(clearance_scope="complete")
    report = asyncio.run(MeClearEngine(config).aclear(MEMORIES, evaluate))
    expected = MeClearEngine(config).clear(MEMORIES, sync_eval)
    assert report.carrier_ids == expected.carrier_ids
    assert report.kept_ids == expected.kept_ids


def test_clearance_end_event_names_carriers() -> None:
    events = []
    engine = MeClearEngine(ClearanceConfig(clearance_scope="complete"), listener=events.append)
    report = engine.clear(MEMORIES, SimulatedEvaluator(redundant_world(), "Paris"))
    end = [e for e in events if e.stage == "clearance" and e.phase == "end"][-1]
    assert end.payload["carrier_ids"] == report.carrier_ids
    assert end.payload["withheld_ids"] == report.carrier_ids
    assert end.payload["carrier_status"] == "found"


def test_report_round_trips_with_carriers() -> None:
    from meclear_integrations.core.report import ClearanceReport

    report = MeClearEngine(ClearanceConfig(clearance_scope="complete")).clear(
        MEMORIES, SimulatedEvaluator(redundant_world(), "Paris")
    )
    again = ClearanceReport.model_validate_json(report.model_dump_json())
    assert again.carriers == report.carriers and again.withheld_ids == report.withheld_ids


@pytest.mark.parametrize("scope", ["minimal", "complete"])
def test_no_carriers_without_a_clearance(scope: str) -> None:
    world = EvidenceWorld.from_claims({"g": ("Paris", 1.0)}, ties="prompt")
    report = MeClearEngine(ClearanceConfig(clearance_scope=scope)).clear(  # type: ignore[arg-type]
        MEMORIES, SimulatedEvaluator(world, "Paris")
    )
    assert report.early_exit and report.carrier_status is None and report.cost.carrier_calls == 0


def test_table_shows_carriers_and_skips() -> None:
    from meclear_integrations.simulation.examples import heavy_redundancy_example

    case = heavy_redundancy_example()
    report = MeClearEngine(ClearanceConfig(clearance_scope="complete")).clear(
        case.memories, case.evaluator()
    )
    table = report.to_table()
    assert "carriers (found," in table
    assert "f3 alone answers 'January 2023' (withheld)" in table
    lonely = EvidenceWorld.from_claims({"b1": ("Rome", 1.0)}, ties="prompt")
    stopped = MeClearEngine(ClearanceConfig(stops={"unexplained": True})).clear(
        case.memories, SimulatedEvaluator(lonely, case.reference)
    )
    assert "skipped: no_memory_explains_failure" in stopped.to_table()
