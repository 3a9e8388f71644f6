"""The ledger keeps the carriers of a verified harm with their evidence; review proposes them."""

from __future__ import annotations

import pytest

from meclear_integrations.core import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.ledger.review import carrier_proposals
from meclear_integrations.simulation.evaluator import SimulatedEvaluator
from meclear_integrations.simulation.world import EvidenceWorld

COPIES = ["p0", "p1", "p2", "p3", "p4"]


def report(scope: str = "minimal", ids: tuple[str, ...] = ()):
    weights = [1.0, 0.8, 0.5, 0.3, 0.2]
    claims = {"g": ("Paris", 1.5)} | {p: ("Rome", w) for p, w in zip(COPIES, weights, strict=True)}
    order = ids or ("g", "b1", "p0", "p1", "b2", "p2", "p3", "p4")
    memories = [Memory(id=i, content=f"text of {i}") for i in order]
    config = ClearanceConfig(find_carriers=True, clearance_scope=scope)  # type: ignore[arg-type]
    world = EvidenceWorld.from_claims(
        {k: v for k, v in claims.items() if k in order}, ties="prompt"
    )
    return MeClearEngine(config).clear(memories, SimulatedEvaluator(world, "Paris"))


def test_run_record_keeps_carriers_with_evidence(ledger_url: str) -> None:
    r = report()
    assert r.carriers
    with HarmLedger(ledger_url) as ledger:
        run = ledger.record(r, query="Where?")
        again = ledger.runs(limit=1)[0]
    for record in (run, again):
        assert record.carrier_ids == r.carrier_ids
        assert record.carriers[0]["answer"] == "Rome"
        assert record.carriers[0]["harmful_answer"] == "Rome"
        assert record.extra["carrier_status"] == "found"
        assert not set(record.carrier_ids) & set(record.cleared_ids)


def test_no_carriers_key_when_the_search_did_not_run(ledger_url: str) -> None:
    plain = MeClearEngine(ClearanceConfig()).clear(
        [Memory(id="g", content="g")],
        SimulatedEvaluator(EvidenceWorld.from_claims({"g": ("Paris", 1.0)}), "Paris"),
    )
    with HarmLedger(ledger_url) as ledger:
        run = ledger.record(plain, query="Where?", extra={"team": "a"})
    assert run.carriers == [] and run.extra == {"team": "a"}


def test_review_proposes_carriers_across_queries(ledger_url: str) -> None:
    with HarmLedger(ledger_url) as ledger:
        ledger.record(report(), query="Where did she go?")
        ledger.record(report("complete"), query="Where was she?")
        proposals = ledger.carrier_review()
        twice = ledger.carrier_review(min_queries=2)
    assert {p.memory_id for p in proposals} <= set(COPIES)
    assert proposals and proposals[0].queries == 2
    assert proposals[0].answers == ["Rome"] and proposals[0].harmful_answers == ["Rome"]
    assert proposals[0].withheld == 1 and len(proposals[0].run_ids) == 2
    assert {p.memory_id for p in twice} == {p.memory_id for p in proposals if p.queries >= 2}


def test_unverified_runs_propose_nothing(ledger_url: str) -> None:
    r = report().model_copy(update={"status": "unverified"})
    with HarmLedger(ledger_url) as ledger:
        ledger.record(r, query="Where?")
        assert ledger.carrier_review() == []
    with pytest.raises(Exception, match="min_queries"):
        carrier_proposals([], min_queries=0)
