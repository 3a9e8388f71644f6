"""answer_groups="auto" (default): the redundancy signature asks each memory alone, at no
cost elsewhere; the copies are grouped, cleared together and the rest reported as carriers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from meclear_integrations.core import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.answers import note_answer

# six copies of one wrong date among twelve memories: any copy flips the answer beside the
# gold (strong copies), so no removal that leaves a copy changes the failing answer
ORDER = ["b0", "c0", "b1", "c1", "gold", "c2", "b2", "c3", "b3", "c4", "b4", "c5"]
COPIES = {i for i in ORDER if i.startswith("c")}
MEMORIES = [Memory(id=i, content=f"note {i}: unrelated words {i * 3}") for i in ORDER]
RIGHT, WRONG = "7 May 2023", "14 August 2023"


def evaluator() -> Callable[[tuple[Memory, ...], int], float]:
    """An agent that answers the wrong date whenever a copy is in its context."""

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        ids = {m.id for m in coalition}
        answer = WRONG if ids & COPIES else RIGHT if "gold" in ids else "I don't know."
        note_answer(answer)
        return 1.0 if answer == RIGHT else 0.0

    return evaluate


def test_signature_groups_the_copies_and_recovers() -> None:
    previous = ClearanceConfig(answer_groups=False, stops={"unexplained": False})
    old = MeClearEngine(previous).clear(MEMORIES, evaluator())
    new = MeClearEngine(ClearanceConfig()).clear(MEMORIES, evaluator())
    assert not any(a.answer_group for a in old.attributions)  # not asked without "auto"
    assert new.recovered and new.status == "complete"
    assert set(new.cleared_ids) | set(new.carrier_ids) == COPIES
    assert {a.memory_id for a in new.attributions if a.answer_group} == COPIES  # every copy
    # at most the K singletons on top of what the old default paid
    assert new.cost.evaluator_calls <= old.cost.evaluator_calls + len(MEMORIES)


def test_no_singletons_without_the_signature() -> None:
    """One copy: removing it changes the answer, so the screening answers differ."""

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        ids = {m.id for m in coalition}
        answer = WRONG if "c0" in ids else RIGHT if "gold" in ids else "I don't know."
        note_answer(answer)
        return 1.0 if answer == RIGHT else 0.0

    on = MeClearEngine(ClearanceConfig()).clear(MEMORIES, evaluate)
    off = MeClearEngine(ClearanceConfig(answer_groups=False)).clear(MEMORIES, evaluate)
    assert on.cleared_ids == off.cleared_ids == ["c0"]
    assert on.cost.evaluator_calls == off.cost.evaluator_calls
    assert on.carrier_status is None  # the carriers search was not paid for


def test_carriers_reported_from_the_singletons_at_no_call() -> None:
    new = MeClearEngine(ClearanceConfig()).clear(MEMORIES, evaluator())
    assert new.carrier_status in ("found", "none_found")
    assert new.cost.carrier_calls == 0


def test_async_path_groups_too() -> None:
    sync_eval = evaluator()

    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        return sync_eval(coalition, trial)

    report = asyncio.run(MeClearEngine(ClearanceConfig()).aclear(MEMORIES, evaluate))
    assert report.recovered
    assert {a.memory_id for a in report.attributions if a.answer_group} == COPIES
