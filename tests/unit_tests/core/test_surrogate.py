"""The surrogate candidate source: a Lasso fit on the coalition table, candidates verified."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
from pydantic import ValidationError

from meclear_integrations.core import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.budget import RunBudget
from meclear_integrations.core.config import Verification
from meclear_integrations.core.failures.retry import CallRetrier
from meclear_integrations.core.game import Coalition, CoalitionGame
from meclear_integrations.core.report import ClearanceReport
from meclear_integrations.core.stages.attribution import Attribution
from meclear_integrations.core.stages.clearing import clearance
from meclear_integrations.core.stages.sources import SurrogateSource, fallback_sources
from meclear_integrations.core.stages.steps import Evaluate, Run, Steps
from meclear_integrations.core.surrogate import SurrogateCandidates, lasso, surrogate_weights
from meclear_integrations.core.verification.rule import candidate_coalition

K = 6
GOLD, COPY_A, COPY_B = 0, 2, 4
"""The gold memory and two copies of one harmful fact: either copy alone misleads."""


def passes(coalition: Coalition) -> float:
    """The redundant pair: the answer is right with the gold memory and neither copy."""
    misled = coalition & ((1 << COPY_A) | (1 << COPY_B))
    return 1.0 if coalition & (1 << GOLD) and not misled else 0.0


def exact_table(score: Any = passes) -> CoalitionGame:
    """Every coalition evaluated once (Eq. 3's table), as attribution leaves it."""
    game = CoalitionGame(
        context=tuple(Memory(id=f"m{i}", content=f"memory {i}") for i in range(K)), trials=2
    )
    for coalition in range(1 << K):
        game.store(coalition, [score(coalition)])
    return game


def run_of(game: CoalitionGame, config: ClearanceConfig) -> Run:
    budget = RunBudget()
    return Run(
        config=config, game=game, budget=budget, retrier=CallRetrier(config.failure.retry, budget)
    )


def unflagged(run: Run) -> Attribution:
    """H^ found nothing (each copy's share is inside the tolerance, say): no candidate."""
    estimator = SimpleNamespace(name="exact", enumerates=True, suspects=())
    return Attribution(
        estimator=cast(Any, estimator), psi=[0.0] * K, sampled=False, priority=[], fallback=[]
    )


def drive(stage: Steps[Any], game: CoalitionGame, asked: list[Coalition]) -> Any:
    """Run a stage, evaluating every coalition it asks for with :func:`passes`."""
    try:
        step = next(stage)
        while True:
            if isinstance(step, Evaluate):
                for coalition, trials in step.coalitions:
                    missing = trials - game.trials_of(coalition)
                    if missing > 0:
                        asked.append(coalition)
                        game.store(coalition, [passes(coalition)] * missing)
            step = stage.send(None)
    except StopIteration as done:
        return done.value


def config(surrogate: SurrogateCandidates | None) -> ClearanceConfig:
    return ClearanceConfig(
        escalation=False,
        answer_groups=False,
        verification={"surrogate": surrogate},
    )


def test_lasso_matches_the_least_squares_fit_without_a_penalty() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, size=(64, 5)).astype(float)
    y = x @ np.array([0.5, -0.25, 0.0, 0.0, 1.0]) + 0.1
    w, b = lasso(x, y, 0.0)
    assert w == pytest.approx([0.5, -0.25, 0.0, 0.0, 1.0], abs=1e-6)
    assert b == pytest.approx(0.1, abs=1e-6)


def test_lasso_zeroes_weights_below_the_penalty() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((200, 4))
    y = x @ np.array([1.0, 0.0, 0.0, -0.02])
    w, _ = lasso(x, y, 0.1)
    assert w[1] == w[2] == w[3] == 0.0
    assert 0.8 < w[0] < 1.0  # shrunk by about alpha


def test_lasso_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="alpha"):
        lasso(np.zeros((2, 2)), np.zeros(2), -1.0)
    with pytest.raises(ValueError, match="do not match"):
        lasso(np.zeros((3, 2)), np.zeros(2), 0.1)


def test_the_surrogate_recovers_a_planted_sparse_harm_from_an_exact_table() -> None:
    planted = {GOLD: 0.6, COPY_A: -0.3, COPY_B: -0.2}

    def linear(coalition: Coalition) -> float:
        return 0.3 + sum(w for i, w in planted.items() if coalition & (1 << i))

    weights = surrogate_weights(exact_table(linear), alpha=1e-4)
    expected = np.array([planted.get(i, 0.0) for i in range(K)])
    assert weights == pytest.approx(expected, abs=0.01)
    assert [i for i in np.argsort(weights) if weights[i] < -0.05] == [COPY_A, COPY_B]


def test_the_fit_reads_the_table_and_makes_no_model_call() -> None:
    game = exact_table()
    before = (dict(game.scores), game.evaluator_calls, game.cache_hits)
    weights = surrogate_weights(game, 0.001)
    chain = SurrogateSource(SurrogateCandidates()).chain(
        run_of(game, config(SurrogateCandidates()))
    )
    assert (dict(game.scores), game.evaluator_calls, game.cache_hits) == before
    assert sorted(chain) == [COPY_A, COPY_B]  # the two copies, and only they
    assert weights[GOLD] > 0.0


def test_a_table_with_nothing_to_fit_gives_zero_weights() -> None:
    game = exact_table(lambda _c: 1.0)  # a constant value: no harm to find
    assert not surrogate_weights(game, 0.001).any()
    empty = CoalitionGame(context=(Memory(id="m0", content="x"),), trials=1)
    assert not surrogate_weights(empty, 0.001).any()


def test_where_h_finds_nothing_the_surrogate_finds_the_pair_and_verifies_it() -> None:
    outcomes: dict[str, tuple[ClearanceReport, list[Coalition]]] = {}
    for label, surrogate in (("off", None), ("on", SurrogateCandidates())):
        game = exact_table()
        run = run_of(game, config(surrogate))
        asked: list[Coalition] = []
        report = drive(clearance(run, unflagged(run), []), game, asked)
        outcomes[label] = (report, asked)
    off, _ = outcomes["off"]
    assert off.cleared_ids == []
    on, asked = outcomes["on"]
    assert sorted(on.cleared_ids) == [f"m{COPY_A}", f"m{COPY_B}"]
    assert on.recovered
    surrogate = [c for c in on.candidates if c.family == "surrogate"]
    assert [c.size for c in surrogate] == [1, 2]  # the nested prefixes, smallest first
    assert [c.admissible for c in surrogate] == [False, True]
    # the calls: the full context's trials and the candidates' verification, nothing to fit
    allowed = {
        game_full(),
        *(candidate_coalition(K, c) for c in ([COPY_A], [COPY_B], [COPY_A, COPY_B])),
    }
    assert set(asked) <= allowed


def game_full() -> Coalition:
    return (1 << K) - 1


def test_the_source_is_on_by_default_off_in_the_paper_preset_and_a_typed_setting() -> None:
    assert ClearanceConfig().verification.surrogate == SurrogateCandidates()
    assert ClearanceConfig.preset("default").verification.surrogate == SurrogateCandidates()
    assert ClearanceConfig.cheap().verification.surrogate == SurrogateCandidates()
    assert ClearanceConfig.paper().verification.surrogate is None
    assert ClearanceConfig.preset("paper").verification.surrogate is None
    assert any(
        isinstance(s, SurrogateSource)
        for s in fallback_sources(run_of(exact_table(), ClearanceConfig()))
    )
    paper = run_of(exact_table(), ClearanceConfig.paper())
    assert not any(isinstance(s, SurrogateSource) for s in fallback_sources(paper))
    off = ClearanceConfig(verification=Verification(surrogate=None))
    assert not any(
        isinstance(s, SurrogateSource) for s in fallback_sources(run_of(exact_table(), off))
    )
    # stored configurations read back as written, off included (no default fills the gap)
    for stored in (off, ClearanceConfig(), ClearanceConfig.paper()):
        assert ClearanceConfig.model_validate_json(stored.model_dump_json()) == stored
        assert ClearanceConfig.model_validate(stored.model_dump()) == stored
    on = ClearanceConfig(verification={"surrogate": {"alpha": 0.01, "max_size": 2}})
    assert ClearanceConfig.model_validate_json(on.model_dump_json()) == on
    assert any(isinstance(s, SurrogateSource) for s in fallback_sources(run_of(exact_table(), on)))
    with pytest.raises(ValidationError):
        SurrogateCandidates(alpha=0.0)
    with pytest.raises(ValidationError):
        ClearanceConfig(verification={"surrogate": {"alpah": 0.01}})


def test_a_full_context_that_recovers_wants_no_surrogate() -> None:
    game = exact_table(lambda c: 1.0 if c & (1 << GOLD) else 0.0)
    game.store(game_full(), [1.0])
    run = run_of(game, config(SurrogateCandidates()))
    selection = SimpleNamespace(selected=0, undecided=False)
    assert not SurrogateSource(SurrogateCandidates()).wanted(
        run, unflagged(run), cast(Any, selection)
    )


def test_an_undecided_run_still_asks_the_surrogate() -> None:
    """Abstaining is where another verified candidate helps: the source looks then too."""
    run = run_of(exact_table(), config(SurrogateCandidates()))
    undecided = SimpleNamespace(selected=0, undecided=True)
    chosen = SimpleNamespace(selected=1, undecided=False)
    source = SurrogateSource(SurrogateCandidates())
    assert source.wanted(run, unflagged(run), cast(Any, undecided))
    assert not source.wanted(run, unflagged(run), cast(Any, chosen))


COPIES = ("c1", "c2", "c3", "c4")
"""Four copies of one wrong fact: each copy's Shapley share is -1/20, inside tau = 0.05."""


def four_copies(coalition: tuple[Memory, ...], trial: int) -> float:
    ids = {m.id for m in coalition}
    return 1.0 if "gold" in ids and not ids & set(COPIES) else 0.0


def engine_config(surrogate: SurrogateCandidates | None) -> ClearanceConfig:
    return ClearanceConfig(
        estimator="exact",
        escalation=False,
        answer_groups=False,
        verification={"surrogate": surrogate},
    )


def memories() -> list[Memory]:
    ids = ("gold", *COPIES, "background")
    return [Memory(id=i, content=f"memory {i}") for i in ids]


def test_the_engine_clears_what_h_misses_only_with_the_surrogate() -> None:
    off = MeClearEngine(engine_config(None)).clear(memories(), four_copies)
    assert off.cleared_ids == [] and not off.recovered
    assert not any(a.harmful for a in off.attributions)  # H^ is empty: every share inside tau
    on = MeClearEngine(engine_config(SurrogateCandidates())).clear(memories(), four_copies)
    assert sorted(on.cleared_ids) == sorted(COPIES)
    assert on.recovered and on.final_value == 1.0
    assert [c.size for c in on.candidates if c.family == "surrogate"] == [1, 2, 3, 4]
    # the fit itself costs nothing: the extra calls are the four prefixes' verification
    extra = on.cost.evaluator_calls - off.cost.evaluator_calls
    verified = sum(c.trials for c in on.candidates if c.family == "surrogate")
    assert 0 < extra <= verified


async def test_the_async_path_makes_the_same_clearance() -> None:
    config = engine_config(SurrogateCandidates())
    sync = MeClearEngine(config).clear(memories(), four_copies)
    report = await MeClearEngine(config).aclear(memories(), four_copies)
    assert report.cleared_ids == sync.cleared_ids
    assert report.cost.evaluator_calls == sync.cost.evaluator_calls
