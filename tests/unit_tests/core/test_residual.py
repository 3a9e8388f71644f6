"""Residual evidence moves Eq. 20's choice to a larger clearance only when the table backs it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from meclear_integrations.core import ClearanceConfig, ExactShapley, MeClearEngine, Memory
from meclear_integrations.core.config import TableEvidence
from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.core.estimators import AutoShapley, estimator_from_settings
from meclear_integrations.core.game import CoalitionGame
from meclear_integrations.core.residual import promote, residual_z
from meclear_integrations.simulation import EvidenceWorld, SimulatedEvaluator

GOLD, HARM, PARTNER = 0, 1, 2
TRIALS = 12


def _scores(rate: float) -> tuple[float, ...]:
    passes = round(rate * TRIALS)
    return tuple(1.0 if t < passes else 0.0 for t in range(TRIALS))


def table(partner_harm: float) -> CoalitionGame:
    """Three memories: the gold one, a harmful one, and a partner that costs ``partner_harm``."""
    game = CoalitionGame(
        context=tuple(Memory(id=f"m{i}", content=f"t{i}") for i in range(3)), trials=1
    )
    for coalition in range(8):
        if not coalition & (1 << GOLD) or coalition & (1 << HARM):
            rate = 0.0
        elif coalition & (1 << PARTNER):
            rate = 1.0 - partner_harm
        else:
            rate = 1.0
        game.store(coalition, _scores(rate))
    return game


def candidates() -> list[int]:
    full = 0b111
    return [full, full & ~(1 << HARM), full & ~(1 << HARM) & ~(1 << PARTNER)]


def test_a_harmful_partner_has_a_large_residual_z() -> None:
    kept = candidates()[1]
    assert residual_z(table(0.5), kept, 1 << PARTNER) > 1.64
    assert residual_z(table(0.0), kept, 1 << PARTNER) == pytest.approx(0.0)


def test_promote_moves_to_the_larger_clearance_only_with_residual_evidence() -> None:
    coalitions = candidates()
    assert promote(table(0.5), coalitions, 1, [True, True, True], 1.64) == 2
    # not admissible: never selected
    assert promote(table(0.5), coalitions, 1, [True, True, False], 1.64) == 1
    # the context without C is selected: nothing to move
    assert promote(table(0.5), coalitions, 0, [True, True, True], 1.64) == 0


def test_a_lucky_background_deletion_is_not_promoted() -> None:
    game = table(0.0)  # the third memory is background: no effect anywhere in the table
    coalitions = candidates()
    game.store(coalitions[1], _scores(11 / 12))  # the smaller clearance's verification: 11/12
    assert game.value(coalitions[2]) > game.value(coalitions[1])
    assert residual_z(game, coalitions[1], 1 << PARTNER) < 1.64
    assert promote(game, coalitions, 1, [True, True, True], 1.64) == 1


def test_residual_z_is_a_clearance_setting_that_round_trips() -> None:
    config = ClearanceConfig(table_evidence=TableEvidence(residual_z=1.64, answer_residual_z=0.0))
    assert config.table_evidence.residual_z == 1.64
    assert ClearanceConfig.model_validate_json(config.model_dump_json()) == config
    with pytest.raises(ValidationError):
        ClearanceConfig(table_evidence={"residual_z": -1.0})


def test_the_estimator_settings_that_moved_raise_with_the_new_place() -> None:
    with pytest.raises(ConfigurationError, match=r"table_evidence=TableEvidence\(residual_z"):
        ExactShapley(residual_z=1.64)
    with pytest.raises(ConfigurationError, match=r"TableEvidence\(answer_residual_z"):
        AutoShapley(exact_budget=32, exact_answer_residual_z=0.0)
    with pytest.raises(TypeError):
        ExactShapley(no_such_setting=1)


def test_a_configuration_stored_with_the_old_spelling_reads_back() -> None:
    # a report's configuration written when the add-ons were the exact estimator's
    stored = {
        "estimator": {
            "name": "auto",
            "exact_budget": 32,
            "exact_residual_z": 1.64,
            "exact_answer_flags": True,
            "exact_answer_residual_z": 0.0,
        },
    }
    config = ClearanceConfig.model_validate(stored)
    assert config.estimator == AutoShapley(exact_budget=32)
    assert config.table_evidence.model_dump() == {
        "answer_flags": True,
        "residual_z": 1.64,
        "answer_residual_z": 0.0,
    }
    exact = ClearanceConfig.model_validate({"estimator": {"name": "exact", "residual_z": 1.0}})
    assert exact.table_evidence.residual_z == 1.0
    assert estimator_from_settings(exact.estimator.settings()) == ExactShapley()  # type: ignore[union-attr]


def _joint_world() -> tuple[list[Memory], EvidenceWorld]:
    # a LoCoMo joint-harm case of the dev split (locomo-26-q005-joint), renamed
    memories = [Memory(id=f"m{i}", content=f"memory {i}") for i in range(5)]
    world = EvidenceWorld.from_claims(
        {
            "m0": ("Paris", 1.162),
            "m1": ("Rome", 1.548),
            "m2": ("Rome", 1.323),
            "m3": ("Paris", 0.313),
            "m4": ("Paris", 0.105),
        },
        temperature=0.2,
        abstain_weight=0.5,
    )
    return memories, world


def _both_cleared(residual: float | None, case_ids: list[str]) -> int:
    memories, world = _joint_world()
    config = ClearanceConfig(
        estimator=ExactShapley(error_model="pooled", noise_floor=0.02, z=1.0),
        table_evidence=TableEvidence(residual_z=residual),
        harm_rule="auto",
        harm_tolerance=0.02,
        verification={"recovery_rate": 0.3, "max_trials": 12},
        seed=0,
    )
    both = 0
    for case_id in case_ids:
        evaluator = SimulatedEvaluator(world, "Paris", case_id=case_id)
        cleared = set(MeClearEngine(config).clear(memories, evaluator).cleared_ids)
        assert cleared <= {"m1", "m2", "m3", "m4"}
        both += cleared >= {"m1", "m2"}
    return both


def test_the_engine_clears_a_joint_partner_more_often_with_residual_evidence() -> None:
    _, world = _joint_world()
    # removing only m1 leaves m2 pulling the answer away; removing both recovers
    assert world.expected_score(["m0", "m2", "m3", "m4"], "Paris") < 0.8
    assert world.expected_score(["m0", "m3", "m4"], "Paris") > 0.99
    case_ids = [f"joint-{n}" for n in range(12)]
    assert _both_cleared(1.64, case_ids) > _both_cleared(None, case_ids)


def _stale_world() -> tuple[list[Memory], EvidenceWorld]:
    # after a CLARK-News stale-redundant case of the dev split: two stale copies, one current
    # fact; the weaker copy alone still pulls the answer away
    memories = [Memory(id=m, content=f"memory {m}") for m in ("cur", "s1", "s2", "b0", "b1")]
    world = EvidenceWorld.from_claims(
        {
            "cur": ("Procurement", 1.0),
            "s1": ("Southern Ontario", 1.2),
            "s2": ("Southern Ontario", 0.9),
        },
        temperature=0.2,
        abstain_weight=0.5,
    )
    return memories, world


def _stale_runs(residual: float | None, case_ids: list[str]) -> tuple[int, int]:
    memories, world = _stale_world()
    config = ClearanceConfig(
        estimator=ExactShapley(error_model="pooled", noise_floor=0.02, z=1.0),
        table_evidence=TableEvidence(residual_z=residual),
        harm_rule="auto",
        harm_tolerance=0.02,
        verification={"recovery_rate": 0.3, "max_trials": 12},
        seed=0,
    )
    both = residual_family = 0
    for case_id in case_ids:
        evaluator = SimulatedEvaluator(world, "Procurement", case_id=case_id)
        report = MeClearEngine(config).clear(memories, evaluator)
        assert "cur" not in report.cleared_ids
        both += set(report.cleared_ids) >= {"s1", "s2"}
        residual_family += any(c.family == "residual" for c in report.candidates)
    return both, residual_family


def test_residual_evidence_clears_both_stale_copies_more_often() -> None:
    case_ids = [f"stale-{n}" for n in range(12)]
    both_off, family_off = _stale_runs(None, case_ids)
    both_on, _ = _stale_runs(1.64, case_ids)
    assert family_off == 0  # without residual_z no residual candidate is ever tried
    assert both_on > both_off
