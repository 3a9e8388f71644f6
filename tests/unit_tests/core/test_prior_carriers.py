"""The carriers search also runs after a verified ledger-guided prior clearance."""

from __future__ import annotations

import asyncio

from meclear_integrations.core import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.simulation.evaluator import SimulatedEvaluator
from meclear_integrations.simulation.world import EvidenceWorld

COPIES = ("p0", "p1", "p2", "p3", "p4")
MEMORIES = [Memory(id=i, content=f"text of {i}") for i in ("g", "b1", *COPIES, "b2")]


def evaluator() -> SimulatedEvaluator:
    weights = [1.0, 0.8, 0.5, 0.3, 0.2]
    claims = {"g": ("Paris", 1.5)} | {p: ("Rome", w) for p, w in zip(COPIES, weights, strict=True)}
    return SimulatedEvaluator(EvidenceWorld.from_claims(claims, ties="prompt"), "Paris")


def clear(prior: list[str] = (), **settings: object):  # type: ignore[assignment]
    config = ClearanceConfig(**settings)  # type: ignore[arg-type]
    return MeClearEngine(config).clear(MEMORIES, evaluator(), prior_harmful=prior)


def test_prior_clearance_reports_the_carriers() -> None:
    cold = clear(find_carriers=True)
    assert cold.cleared_ids and cold.carrier_ids
    warm = clear(list(cold.cleared_ids), find_carriers=True)
    assert warm.clearance_search == "prior" and warm.recovered
    assert warm.cleared_ids == cold.cleared_ids
    assert warm.carrier_ids == cold.carrier_ids  # the copies the ledger did not know
    assert warm.carrier_status == "found" and warm.cost.carrier_calls > 0
    assert set(warm.carrier_ids) <= set(COPIES)
    # the prior path stays cheaper than the cold run even with the search
    assert warm.cost.evaluator_calls < cold.cost.evaluator_calls


def test_prior_clearance_complete_withholds_every_copy() -> None:
    warm = clear(["p0", "p3"], clearance_scope="complete")
    assert warm.clearance_search == "prior" and warm.recovered
    assert {m.id for m in warm.kept} == {"g", "b1", "b2"}
    assert {m.id for m in warm.withheld} | set(warm.cleared_ids) == set(COPIES)
    assert all(c.withheld for c in warm.carriers)


def test_no_search_when_carriers_are_not_wanted() -> None:
    warm = clear(["p0", "p3"])
    assert warm.clearance_search == "prior"
    assert warm.carriers == [] and warm.carrier_status is None
    assert warm.cost.carrier_calls == 0


def test_async_prior_clearance_reports_the_carriers() -> None:
    sync_eval = evaluator()

    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        return sync_eval(coalition, trial)

    engine = MeClearEngine(ClearanceConfig(find_carriers=True))
    warm = asyncio.run(engine.aclear(MEMORIES, evaluate, prior_harmful=["p0", "p3"]))
    assert warm.clearance_search == "prior" and warm.carrier_ids
