"""Grouping memories by the answer they support (core.grouping.answer_group) and the
answer-group candidates of the clearance stage."""

from __future__ import annotations

from meclear_integrations.core import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.answers import note_answer
from meclear_integrations.core.game import CoalitionGame, from_positions
from meclear_integrations.core.grouping import answer_group, failing_answers
from meclear_integrations.simulation.evaluator import SimulatedEvaluator
from meclear_integrations.simulation.world import EvidenceWorld


def game_with(answers: dict[int, str], reference: str = "Paris", k: int = 4) -> CoalitionGame:
    game = CoalitionGame(context=tuple(Memory(id=f"m{i}", content="x") for i in range(k)), trials=1)
    for coalition, answer in answers.items():
        game.store(coalition, [1.0 if answer == reference else 0.0], [answer])
    return game


def test_group_is_the_memories_that_alone_give_the_failing_answer() -> None:
    game = game_with(
        {
            from_positions(range(4)): "Rome",
            0: "I don't know",
            from_positions([0]): "Paris",
            from_positions([1]): "Rome",
            from_positions([2]): "I don't know",
            from_positions([3]): "rome",
        }
    )
    assert failing_answers(game, 1.0) == ["Rome"]
    assert answer_group(game, 1.0) == [1, 3]


def test_no_group_without_the_empty_control_or_when_harm_is_abstention() -> None:
    no_control = game_with({from_positions(range(4)): "Rome", from_positions([1]): "Rome"})
    assert answer_group(no_control, 1.0) == []
    abstains = game_with(
        {
            from_positions(range(4)): "I don't know",
            0: "I don't know",
            from_positions([1]): "I don't know",
        }
    )
    assert answer_group(abstains, 1.0) == []


def test_a_singleton_answer_that_passes_is_never_in_the_group() -> None:
    game = game_with({from_positions(range(4)): "Rome", 0: "?", from_positions([2]): "Rome"})
    game.store(from_positions([2]), [1.0], ["Rome"])  # a second trial the judge passed
    assert answer_group(game, 1.0) == []


def heavy_world(n: int = 8) -> tuple[list[Memory], EvidenceWorld, list[str]]:
    """Copies spread so that no union of hierarchical blocks recovers."""
    copies = [f"c{i}" for i in range(n)]
    claims = {"g": ("Paris", 1.0)} | {c: ("Rome", 0.45) for c in copies}
    ids = ["g", *copies, "b0", "b1", "b2", "b3"]
    return (
        [Memory(id=i, content=f"memory {i}") for i in ids],
        EvidenceWorld.from_claims(claims, ties="prompt"),
        copies,
    )


def test_group_flags_every_copy_and_recovers_where_attribution_alone_does_not() -> None:
    memories, world, copies = heavy_world()
    evaluate = SimulatedEvaluator(world, "Paris")
    plain = MeClearEngine(ClearanceConfig(escalation=False, stops={"unexplained": False})).clear(
        memories, evaluate
    )
    grouped = MeClearEngine(ClearanceConfig(answer_groups=True, escalation=False)).clear(
        memories, evaluate
    )
    assert {a.memory_id for a in grouped.attributions if a.answer_group} == set(copies)
    assert grouped.recovered and set(grouped.cleared_ids) <= set(copies)
    assert not plain.recovered  # shares shrink as copies multiply: H^ holds too few
    group_tried = [c for c in grouped.candidates if c.family == "answer_group"]
    assert group_tried and any(c.admissible for c in group_tried)
    # a binary search, not one candidate per prefix
    assert len(group_tried) <= 1 + len(copies).bit_length()
    assert grouped.cost.evaluator_calls - plain.cost.evaluator_calls <= 2 * len(memories)
    # the default's unexplained probe finds no anchor, asks every memory alone and groups
    default = MeClearEngine(ClearanceConfig(escalation=False)).clear(memories, evaluate)
    assert default.recovered and set(default.cleared_ids) <= set(copies)


def test_group_candidates_are_minimal_along_the_chain() -> None:
    """With 8 equal copies against the gold, removing 5 is the least that recovers."""
    memories, world, copies = heavy_world()
    report = MeClearEngine(
        ClearanceConfig(answer_groups=True, escalation=False, clearance_scope="complete")
    ).clear(memories, SimulatedEvaluator(world, "Paris"))
    assert report.recovered
    # 8 x 0.45 = 3.6 against 1.0: at most two copies may stay (0.9 < 1.0)
    assert len(report.cleared_ids) == 6
    assert sorted(report.cleared_ids + report.carrier_ids) == sorted(copies)
    assert sorted(report.removed_ids) == sorted(copies)


def test_custom_evaluator_with_a_paraphrase_equivalence() -> None:
    """The evaluator's equivalence (not string equality) decides the group."""

    def same(a: str, b: str) -> bool:
        return a.lower().replace("jan.", "january") == b.lower().replace("jan.", "january")

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        ids = {m.id for m in coalition}
        if not ids:
            answer = "unknown"
        elif ids & {"c0", "c1", "c2"}:
            answer = {"c0": "January 2023", "c1": "Jan. 2023", "c2": "january 2023"}[
                min(ids & {"c0", "c1", "c2"})
            ]
        elif "g" in ids:
            answer = "December 2023"
        else:
            answer = "unknown"
        note_answer(answer, same=same)
        return 1.0 if answer == "December 2023" else 0.0

    memories = [Memory(id=i, content=i) for i in ["g", "c0", "b", "c1", "c2"]]
    report = MeClearEngine(ClearanceConfig(answer_groups=True)).clear(memories, evaluate)
    assert {a.memory_id for a in report.attributions if a.answer_group} == {"c0", "c1", "c2"}
    assert report.recovered and sorted(report.cleared_ids) == ["c0", "c1", "c2"]
