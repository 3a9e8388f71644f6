"""``Verification.close_trials``: trials past ``max_trials`` where verdicts are close, on a
complete table (``SequentialVerifier.close_plan``); Eq. 18-20 unchanged."""

from __future__ import annotations

import numpy as np

from meclear_integrations import ClearanceConfig, MeClearEngine
from meclear_integrations.core import Memory, Verification
from meclear_integrations.core.game import CoalitionGame
from meclear_integrations.core.verification.rule import Batch, Trials, candidate_coalition, rule_of
from meclear_integrations.core.verification.sequential import Selection
from tests.support.games import make_memories


def _game(k: int = 3) -> CoalitionGame:
    context = tuple(Memory(id=f"m{i}", content=f"memory {i}") for i in range(k))
    return CoalitionGame(context=context, trials=2)


def _drive(
    game: CoalitionGame, trials: Trials[object], scores: dict[int, list[float]]
) -> tuple[object, list[Batch]]:
    """Run a rule's operation on fixed trial sequences per coalition; (decision, batches)."""
    batches: list[Batch] = []
    try:
        batch = next(trials)
        while True:
            batches.append(batch)
            for coalition, n in batch:
                have = game.trials_of(coalition)
                if n > have:
                    game.store(coalition, scores[coalition][have:n], None)
            batch = trials.send(None)
    except StopIteration as done:
        return done.value, batches


def _close(close_trials: int | None) -> ClearanceConfig:
    return ClearanceConfig(verification=Verification(close_trials=close_trials))


def _verified(
    config: ClearanceConfig, scores: dict[int, list[float]], candidates: list[list[int]]
) -> tuple[CoalitionGame, Selection, int]:
    """Verify ``candidates`` (k = 3) under ``config``, then settle close verdicts (with
    ``close_trials`` set)."""
    game = _game()
    rule = rule_of(config)
    coalitions = [candidate_coalition(3, c) for c in candidates]
    _drive(game, rule.verify(game, coalitions), scores)
    close = config.verification.close_trials
    if close is None:
        return game, rule.select(game, candidates), 0
    selection, batches = _drive(game, rule.settle_close(game, candidates, close), scores)
    assert isinstance(selection, Selection)
    return game, selection, len(batches)


def test_a_close_verdict_gets_trials_instead_of_an_abstention() -> None:
    """Clearing m0 passes 3 of its first 12 trials, then every one: undecided at 12
    (abstain); with close trials up to 24 it verifiably recovers and gains."""
    game = _game()
    full, without = game.full, candidate_coalition(3, [0])
    scores = {full: [0.0] * 40, without: [1.0, 0.0, 0.0, 0.0] * 3 + [1.0] * 28}
    _, plain, _ = _verified(_close(None), scores, [[], [0]])
    assert plain.undecided and plain.selected == 0
    game, settled, rounds = _verified(_close(24), scores, [[], [0]])
    assert not settled.undecided and settled.selected == 1 and settled.recovered[1]
    assert rounds >= 1 and 12 < game.trials_of(without) <= 24
    assert 12 < game.trials_of(full) <= 24


def test_a_verdict_that_stays_close_still_abstains() -> None:
    """Close trials change where trials go, never the rule: a candidate that keeps passing
    one time in four is still undecided after them."""
    game = _game()
    full, without = game.full, candidate_coalition(3, [0])
    scores = {full: [0.0] * 40, without: [1.0, 0.0, 0.0, 0.0] * 10}
    game, settled, _ = _verified(_close(24), scores, [[], [0]])
    assert settled.undecided and settled.selected == 0
    assert game.trials_of(without) == 24


def test_a_smaller_close_candidate_is_settled_before_a_superset_is_kept() -> None:
    """{m0, m1} passes three trials in four and verifies; {m0} inside it passes 3 of 12,
    then every trial: with close trials the smaller clearance (one deletion fewer) is
    selected, as no admissible candidate is verifiably better."""
    game = _game()
    full = game.full
    one, two = candidate_coalition(3, [0]), candidate_coalition(3, [0, 1])
    scores = {
        full: [0.0] * 40,
        one: [1.0, 0.0, 0.0, 0.0] * 3 + [1.0] * 28,
        two: [1.0, 1.0, 1.0, 0.0] * 10,
    }
    _, plain, _ = _verified(_close(None), scores, [[], [0], [0, 1]])
    assert plain.selected == 2
    _, settled, _ = _verified(_close(24), scores, [[], [0], [0, 1]])
    assert settled.selected == 1 and settled.admissible[1]


def test_a_quiet_run_or_a_paper_rule_gets_no_close_trials() -> None:
    """Agreeing verdicts are never close; the paper's rule decides on its T trials."""
    game = _game()
    full, without = game.full, candidate_coalition(3, [0])
    quiet = {full: [0.0] * 40, without: [1.0] * 40}
    game, settled, rounds = _verified(_close(24), quiet, [[], [0]])
    assert settled.selected == 1 and rounds == 0 and game.trials_of(without) <= 12
    paper = ClearanceConfig(verification=Verification(rule="paper", close_trials=24))
    noisy = {full: [0.0] * 40, without: [1.0, 0.0] * 20}
    game, settled, rounds = _verified(paper, noisy, [[], [0]])
    assert rounds == 0 and game.trials_of(without) == 2


def _table_evaluator(scores: np.ndarray, memories: list[Memory]):
    position = {m.id: i for i, m in enumerate(memories)}

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        return float(scores[sum(1 << position[m.id] for m in coalition), trial])

    return evaluate


def test_the_engine_settles_close_verdicts_on_a_complete_table() -> None:
    """The abstention of ``test_verification``'s disagreeing case, with m1's clearance
    verifying after its 12th trial: without close trials the run abstains, with the
    default's (24) it clears m1."""
    memories = make_memories(3)
    scores = np.zeros((1 << 3, 40))
    scores[0b101] = [1, 0, 0, 0] * 3 + [1] * 28  # m1 cleared
    scores[0b001] = [1, 0, 0, 0] * 10
    evaluate = _table_evaluator(scores, memories)
    off = ClearanceConfig(estimator="exact", verification=Verification(close_trials=None))
    plain = MeClearEngine(off).clear(memories, evaluate)
    assert plain.status == "unverified" and plain.cleared == []
    config = ClearanceConfig(estimator="exact")
    assert config.verification.close_trials == 24
    report = MeClearEngine(config).clear(memories, evaluate)
    assert report.status == "complete" and report.cleared_ids == ["m1"] and report.recovered
    tried = {tuple(c.memory_ids): c for c in report.candidates}
    assert 12 < tried[("m1",)].trials <= 24


def test_close_trials_need_a_complete_table() -> None:
    """A sampled estimate (kernel) leaves the rule as it was."""
    memories = make_memories(3)
    scores = np.zeros((1 << 3, 40))
    scores[0b101] = [1, 0, 0, 0] * 3 + [1] * 28
    scores[0b001] = [1, 0, 0, 0] * 10
    evaluate = _table_evaluator(scores, memories)
    for estimator in ("kernel",):
        plain = MeClearEngine(
            ClearanceConfig(
                estimator=estimator, seed=0, verification=Verification(close_trials=None)
            )
        ).clear(memories, evaluate)
        close = MeClearEngine(
            ClearanceConfig(estimator=estimator, seed=0, verification=Verification(close_trials=24))
        ).clear(memories, evaluate)
        assert close.cleared_ids == plain.cleared_ids and close.status == plain.status
        assert close.cost.coalitions == plain.cost.coalitions
        assert close.cost.evaluator_calls == plain.cost.evaluator_calls
