"""The verification rule as one object (``core.verification.rule``): built from the
configuration, asked by every stage and by the benchmark's oracle, never tested by name."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import meclear_integrations
from meclear_integrations.core import ClearanceConfig, Memory
from meclear_integrations.core.config import RuleName
from meclear_integrations.core.game import CoalitionGame
from meclear_integrations.core.verification.rule import (
    RULES,
    Batch,
    PaperRule,
    SequentialRule,
    Trials,
    candidate_coalition,
    rule_of,
    select_candidate,
)
from meclear_integrations.core.verification.sequential import Selection

ROOT = Path(meclear_integrations.__file__).parent.parent
SOURCES = [*(ROOT / "meclear_integrations").rglob("*.py"), *(ROOT / "meclear_bench").rglob("*.py")]


def _game(k: int = 3, trials: int = 2) -> CoalitionGame:
    context = tuple(Memory(id=f"m{i}", content=f"memory {i}") for i in range(k))
    return CoalitionGame(context=context, trials=trials)


def _drive(
    game: CoalitionGame, trials: Trials[object], scores: dict[int, float]
) -> tuple[object, list[Batch]]:
    """Run a rule's operation against fixed scores per coalition; (decision, batches)."""
    batches: list[Batch] = []
    try:
        batch = next(trials)
        while True:
            batches.append(batch)
            for coalition, n in batch:
                have = game.trials_of(coalition)
                if n > have:
                    game.store(coalition, [scores[coalition]] * (n - have), None)
            batch = trials.send(None)
    except StopIteration as done:
        return done.value, batches


def test_every_rule_name_has_a_rule() -> None:
    assert set(RULES) == set(get_args(RuleName))
    assert isinstance(rule_of(ClearanceConfig()), SequentialRule)
    assert isinstance(rule_of(ClearanceConfig.paper()), PaperRule)


def test_paper_rule_selects_as_eq_20() -> None:
    game = _game()
    full = game.full
    scores = {full: 0.0, candidate_coalition(3, [0]): 1.0, candidate_coalition(3, [0, 1]): 1.0}
    rule = rule_of(ClearanceConfig.paper())
    coalitions = [full, candidate_coalition(3, [0]), candidate_coalition(3, [0, 1])]
    _, batches = _drive(game, rule.verify(game, coalitions), scores)
    assert batches == [[(c, 2) for c in coalitions]]  # T trials each, one batch
    selection = rule.select(game, [[], [0], [0, 1]])
    assert isinstance(selection, Selection)
    assert selection == select_candidate(game, [[], [0], [0, 1]], 1.0)
    assert (selection.selected, selection.undecided) == (1, False)
    assert rule.final_recovered(game, selection, [0])


def test_removal_is_one_selection_under_either_rule() -> None:
    for config in (ClearanceConfig(), ClearanceConfig.paper()):
        game = _game()
        scores = {game.full: 0.0, candidate_coalition(3, [2]): 1.0}
        selection, _ = _drive(game, rule_of(config).removal(game, [2]), scores)
        assert isinstance(selection, Selection)
        assert selection.selected == 1 and selection.recovered[1]


def test_sequential_rule_asks_for_more_trials_than_t() -> None:
    game = _game()
    scores = {game.full: 0.0, candidate_coalition(3, [1]): 1.0}
    rule = rule_of(ClearanceConfig(trials=1))
    _, batches = _drive(game, rule.removal(game, [1]), scores)
    assert game.trials_of(candidate_coalition(3, [1])) > 1  # the recovery test's passes
    assert batches


def test_exit_test_needs_the_maximum() -> None:
    for config in (ClearanceConfig(), ClearanceConfig.paper()):
        failing, passing = _game(), _game()
        assert _drive(failing, rule_of(config).exit_test(failing), {failing.full: 0.0})[0] is False
        assert _drive(passing, rule_of(config).exit_test(passing), {passing.full: 1.0})[0] is True


def test_recency_rate_changes_only_the_sequential_rule() -> None:
    paper = rule_of(ClearanceConfig.paper())
    assert paper.at_rate(0.9) is paper
    sequential = rule_of(ClearanceConfig())
    assert sequential.at_rate(None) is sequential
    stricter = sequential.at_rate(0.9)
    assert isinstance(stricter, SequentialRule)
    assert stricter.verifier.verify_trials > sequential.verifier.verify_trials  # type: ignore[attr-defined]


def test_no_rule_name_branch_outside_the_rules() -> None:
    """The stages and the oracle ask the rule; none tests its name or calls nu directly."""
    name = re.compile(r"verification\.rule\s*[!=]=")
    nu = re.compile(r"game\.recovers\(")
    places = [
        *(ROOT / "meclear_integrations").rglob("*.py"),
        *(ROOT / "meclear_bench").rglob("*.py"),
    ]
    named = [str(p) for p in places if name.search(p.read_text(encoding="utf-8"))]
    assert named == []
    stages = [
        *(ROOT / "meclear_integrations" / "core" / "stages").glob("*.py"),
        ROOT / "meclear_integrations" / "core" / "escalation.py",
        ROOT / "meclear_bench" / "oracle.py",
    ]
    assert [str(p) for p in stages if nu.search(p.read_text(encoding="utf-8"))] == []


def test_no_estimator_attribute_is_probed() -> None:
    """Stages read what estimators declare (``ShapleyEstimator``), never probe for it."""
    probe = re.compile(r"getattr\((?:estimator|attributed\.estimator|self\.estimator)\b")
    places = [
        *(ROOT / "meclear_integrations").rglob("*.py"),
        *(ROOT / "meclear_bench").rglob("*.py"),
    ]
    assert [str(p) for p in places if probe.search(p.read_text(encoding="utf-8"))] == []
