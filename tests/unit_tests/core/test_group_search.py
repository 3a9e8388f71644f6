"""Heavy redundancy found by group tests and attributed, verified as one group.

``core.grouping.answer_group_search`` finds the memories that alone give the failing
answer without asking every memory alone; hierarchical attribution then tries the context
without the whole group (one leave-group-out) and attributes the group as one player.
"""

from __future__ import annotations

import pytest

from meclear_bench.cli.budget_scale import measure_scale
from meclear_bench.scale_games import ScaleFamily, scale_game
from meclear_integrations.core import ClearanceConfig, EarlyStops, MeClearEngine, Memory
from meclear_integrations.core.game import CoalitionGame, members
from meclear_integrations.core.grouping import (
    answer_group,
    answer_group_search,
    carries_answer,
    memory_graph,
)


def scripted_game(k: int, copies: set[int], gold: int) -> tuple[CoalitionGame, list[int]]:
    """A table whose reader answers "Rome" with any copy, "Paris" with the gold alone."""
    context = tuple(Memory(id=f"m{i}", content=f"note {i} about town {i % 7}") for i in range(k))
    game = CoalitionGame(context=context, trials=1)
    asked: list[int] = []

    def ask(coalition: int) -> None:
        present = set(members(coalition))
        answer = "Rome" if present & copies else "Paris" if gold in present else "I don't know"
        game.store(coalition, [1.0 if answer == "Paris" else 0.0], [answer])
        asked.append(coalition)

    ask(game.full)
    search = answer_group_search(game, 1.0, memory_graph(context))
    try:
        batch = next(search)
        while True:
            for coalition in batch:
                ask(coalition)
            batch = search.send(None)
    except StopIteration:
        pass
    return game, asked


@pytest.mark.parametrize("copies", [{3}, {5, 6, 7}, set(range(10, 30))])
def test_group_tests_find_every_copy_with_fewer_calls_than_asking_each(copies: set[int]) -> None:
    game, asked = scripted_game(120, copies, gold=90)
    assert answer_group(game, 1.0) == sorted(copies)
    assert len(asked) < 120  # asking each memory alone costs K
    for i in copies:  # the group's members are in the table as singletons
        assert carries_answer(game, 1 << i, ["Rome"], 1.0) == "Rome"


def test_no_search_when_the_failing_answer_is_the_no_memory_answer() -> None:
    context = tuple(Memory(id=f"m{i}", content=f"fact {i}") for i in range(40))
    game = CoalitionGame(context=context, trials=1)
    game.store(game.full, [0.0], ["I don't know"])
    game.store(0, [0.0], ["I don't know"])
    search = answer_group_search(game, 1.0, memory_graph(context))
    first = next(search)
    for coalition in first:
        game.store(coalition, [0.0], ["I don't know"])
    with pytest.raises(StopIteration):
        search.send(None)  # abstention says nothing about a memory: no further test
    assert len(first) == 4


@pytest.mark.parametrize(
    "config",
    [ClearanceConfig(), ClearanceConfig(stops=EarlyStops(unexplained=False))],
    ids=["default", "no-unexplained-stop"],
)
@pytest.mark.parametrize("k, copies", [(50, 10), (120, 20)])
def test_heavy_redundancy_is_cleared_as_one_verified_group(
    k: int, copies: int, config: ClearanceConfig
) -> None:
    """Every copy cleared, nothing else; attributed as one player; no carrier call."""
    case = scale_game(k, ScaleFamily("redundant", copies), 2)
    evaluate = case.evaluator()
    alone: set[str] = set()

    def counting(coalition: tuple[Memory, ...], trial: int) -> float:
        if len(coalition) == 1:
            alone.add(coalition[0].id)
        return evaluate(coalition, trial)

    report = MeClearEngine(config).clear(case.memories, counting)
    assert set(case.targets) <= alone and len(alone) < k  # not every memory asked alone
    assert report.recovered
    assert sorted(report.cleared_ids) == sorted(case.targets)
    assert report.cost.carrier_calls == 0
    assert {c.memory_id for c in report.carriers} <= set(case.targets)


def test_heavy_redundancy_costs_at_most_twice_a_single_fault() -> None:
    """The same command's single-fault games set the bar (calls, not time)."""
    (row,) = measure_scale(
        [60],
        games=3,
        families=("direct", "redundant10", "redundant20"),
        presets=("default",),
        wall_games=0,
    )
    stats = {
        family: (n, rec, calls / n, wrong)
        for family, (n, rec, calls, wrong) in row.by_family.items()
    }
    assert all(rec == n and wrong == 0 for n, rec, _, wrong in stats.values())
    single = stats["direct"][2]
    assert stats["redundant10"][2] <= 2 * single
    assert stats["redundant20"][2] <= 2 * single
