"""Answer-backed flags: supporters flagged whatever their interval, inert noise not flagged."""

from __future__ import annotations

import hashlib

import pytest
from pydantic import ValidationError

from meclear_integrations.core import (
    ClearanceConfig,
    ExactShapley,
    MeClearEngine,
    Memory,
    StageEvent,
)
from meclear_integrations.core.answer_flags import (
    answer_backed,
    answer_backed_flags,
    failing_share,
    net_pivots,
)
from meclear_integrations.core.config import TableEvidence
from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.core.estimators import AutoShapley, estimator_from_settings
from meclear_integrations.core.game import CoalitionGame
from meclear_integrations.core.residual import promote, residual_z
from meclear_integrations.simulation import EvidenceWorld, SimulatedEvaluator

from .test_residual import HARM as HARM_
from .test_residual import PARTNER, candidates, table

IDK, RIGHT, WRONG = "I don't know", "Paris", "Rome"
GOLD, HARM, HEDGE_A, HEDGE_B, BACKGROUND = range(5)
TAU = 0.02


def _answer(coalition: int) -> str:
    """A reader: HARM alone wins; the two hedges win together; GOLD otherwise; else IDK."""
    has = [bool(coalition >> i & 1) for i in range(5)]
    wrong = 2.0 * has[HARM] + 0.6 * (has[HEDGE_A] + has[HEDGE_B])
    right = 1.0 * has[GOLD]
    if wrong == right == 0.0 or max(wrong, right) < 0.7:
        return IDK
    return WRONG if wrong > right else RIGHT


def _game(answer_of: dict[int, str] | None = None) -> CoalitionGame:
    game = CoalitionGame(
        context=tuple(Memory(id=f"m{i}", content=f"t{i}") for i in range(5)), trials=1
    )
    for coalition in range(32):
        answer = (answer_of or {}).get(coalition, _answer(coalition))
        game.store(coalition, [1.0 if answer == RIGHT else 0.0], [answer])
    return game


def test_the_reader_has_the_intended_structure() -> None:
    assert _answer(0b11111) == WRONG
    assert _answer(1 << HARM) == WRONG and _answer(1 << HEDGE_A) == IDK
    assert _answer((1 << GOLD) | (1 << HEDGE_A)) == RIGHT
    assert _answer((1 << GOLD) | (1 << HEDGE_A) | (1 << HEDGE_B)) == WRONG


def test_failing_share_and_net_pivots() -> None:
    game = _game()
    assert failing_share(game, 1 << HARM, [WRONG]) == 1.0
    assert failing_share(game, 1 << GOLD, [WRONG]) == 0.0
    assert net_pivots(game, HARM, [WRONG]) > 1.0
    assert net_pivots(game, HEDGE_A, [WRONG]) >= 1.0  # turns {GOLD, HEDGE_B} to Rome
    assert net_pivots(game, BACKGROUND, [WRONG]) == 0.0


def test_a_supporter_is_flagged_whatever_its_interval() -> None:
    game = _game()
    psi = [0.5, -0.05, -0.1, -0.1, -0.05]
    upper = [0.6, 0.1, 0.0, 0.0, 0.05]  # every harmful interval reaches zero
    flags = answer_backed_flags(game, psi, psi, upper, TAU, 1.0)
    assert flags is not None
    assert HARM in flags and HEDGE_A in flags and HEDGE_B in flags
    assert BACKGROUND not in flags  # inert alone, never turns a context


def test_inert_noise_is_not_flagged_however_negative() -> None:
    game = _game()
    psi = [0.5, -0.3, -0.1, -0.1, -0.4]
    upper = [0.6, -0.2, -0.05, -0.05, -0.3]  # a noisy background score, interval clear of 0
    flags = answer_backed_flags(game, psi, psi, upper, TAU, 1.0)
    assert flags == [HARM, HEDGE_A, HEDGE_B]  # Eq. 16's order: most negative first


def test_other_memories_keep_the_interval_rule() -> None:
    # the background memory alone gives an answer that is neither failing nor silent
    game = _game({1 << BACKGROUND: "Berlin"})
    psi = [0.5, -0.3, 0.0, 0.0, -0.1]
    assert answer_backed_flags(game, psi, psi, [0.6, -0.2, 0.1, 0.1, 0.01], TAU, 1.0) == [HARM]
    assert answer_backed_flags(game, psi, psi, [0.6, -0.2, 0.1, 0.1, -0.01], TAU, 1.0) == [
        HARM,
        BACKGROUND,
    ]


def test_no_usable_answers_keeps_the_interval_rule() -> None:
    game = CoalitionGame(
        context=tuple(Memory(id=f"m{i}", content=f"t{i}") for i in range(2)), trials=1
    )
    for coalition in range(4):
        game.store(coalition, [0.0])  # no answers reported
    assert answer_backed_flags(game, [-0.5, 0.0], [-0.6, -0.1], [-0.4, 0.1], TAU, 1.0) is None
    silent_failure = _game({0b11111: IDK})  # the failing answer is the no-memory answer
    assert answer_backed_flags(silent_failure, [0.0] * 5, [0.0] * 5, [0.0] * 5, TAU, 1.0) is None


def test_answer_flags_is_a_clearance_setting_that_round_trips() -> None:
    config = ClearanceConfig(
        estimator=AutoShapley(exact_budget=32, exact_error_model="pooled"),
        table_evidence=TableEvidence(answer_flags=True),
    )
    assert ClearanceConfig.model_validate_json(config.model_dump_json()) == config
    assert estimator_from_settings(ExactShapley().settings()) == ExactShapley()
    assert ClearanceConfig().table_evidence.answer_flags is True  # kept on dev: the default


class _FlippingJudge(SimulatedEvaluator):
    """A temperature-0 reader scored by a judge that flips 15% of its verdicts per call."""

    def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        score = super().__call__(coalition, trial)
        key = f"{self.case_id}|{sorted(m.id for m in coalition)}|{trial}".encode()
        flip = int(hashlib.sha256(key).hexdigest()[:8], 16) / 0xFFFFFFFF < 0.15
        return 1.0 - score if flip else score


def _background_flags(answer_flags: bool) -> int:
    memories = [Memory(id=m, content=f"memory {m}") for m in ("gold", "harm", "b0", "b1", "b2")]
    world = EvidenceWorld.from_claims(
        {"gold": ("Paris", 1.0), "harm": ("Rome", 1.6)}, temperature=0.0, abstain_weight=0.5
    )
    config = ClearanceConfig(
        estimator=ExactShapley(error_model="pooled", noise_floor=0.02, z=1.0),
        table_evidence=TableEvidence(answer_flags=answer_flags),
        harm_rule="auto",
        harm_tolerance=TAU,
        verification={"recovery_rate": 0.3, "max_trials": 12},
        seed=0,
    )
    background = attributed = 0
    for n in range(30):
        evaluator = _FlippingJudge(world, "Paris", case_id=f"noisy-{n}")
        events: list[StageEvent] = []
        MeClearEngine(config, listener=events.append).clear(memories, evaluator)
        end = next((e for e in events if e.stage == "attribution" and e.phase == "end"), None)
        if end is not None:  # a flip may pass the full context: an early exit
            attributed += 1
            background += len(set(end.payload["harmful_ids"]) & {"b0", "b1", "b2"})
    assert attributed >= 20
    return background


def test_judge_flips_do_not_flag_background_with_answer_flags() -> None:
    # the judge's flips move the scores (and psi), never the answers the flags read
    assert _background_flags(False) > 0
    assert _background_flags(True) == 0


def test_supporters_are_flagged_on_their_shares_together() -> None:
    game = _game({1 << HEDGE_A: WRONG})  # a second copy of the harmful claim
    psi = [0.5, -0.2, 0.05, -0.1, 0.0]  # a noisy trial put one copy's share above zero
    upper = [0.6, -0.1, 0.15, 0.0, 0.1]
    lower = [x - 0.1 for x in psi]
    assert answer_backed_flags(game, psi, lower, upper, TAU, 1.0) == [HARM, HEDGE_B, HEDGE_A]
    assert answer_backed(game, 1.0) == [HARM, HEDGE_A, HEDGE_B]
    # a tolerance above the copies' joint share flags neither
    assert answer_backed_flags(game, psi, lower, upper, 0.2, 1.0) == []


def test_promotion_needs_less_residual_evidence_for_answer_backed_deletions() -> None:
    game = table(1 / 3)  # the partner costs a third of the trials
    coalitions = candidates()
    z = residual_z(game, coalitions[1], 1 << PARTNER)
    assert 1.0 < z < 1.64
    assert promote(game, coalitions, 1, [True, True, True], 1.64) == 1
    # the answers back the partner: the lower threshold applies to its deletion only
    assert promote(game, coalitions, 1, [True, True, True], 1.64, 1 << PARTNER, 1.0) == 2
    assert promote(game, coalitions, 1, [True, True, True], 1.64, 1 << HARM_, 1.0) == 1


def test_answer_residual_z_is_a_clearance_setting() -> None:
    config = ClearanceConfig(table_evidence=TableEvidence(answer_flags=True, answer_residual_z=1.0))
    assert config.table_evidence.answer_residual_z == 1.0
    assert config.updated(seed=3).table_evidence == config.table_evidence
    assert config.verification.table_evidence == config.table_evidence  # the shorthand's home
    with pytest.raises(ValidationError):
        ClearanceConfig(table_evidence={"answer_residual_z": -1.0})
    with pytest.raises(ConfigurationError, match="moved"):
        ExactShapley(answer_residual_z=1.0)
