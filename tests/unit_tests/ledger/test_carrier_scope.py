"""Quarantine covers a verified run's carriers for the questions the harm was proven on."""

from __future__ import annotations

import pytest

from meclear_integrations.core import ClearanceConfig, ClearanceReport, MeClearEngine, Memory
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.pipeline.harm import verified_harm
from meclear_integrations.simulation.evaluator import SimulatedEvaluator
from meclear_integrations.simulation.world import EvidenceWorld
from tests.support.clocks import StepClock

COPIES = ["p0", "p1", "p2", "p3", "p4"]
ORDER = ("g", "b1", "p0", "p1", "b2", "p2", "p3", "p4")
QUESTION = "Which city did Anna move to last spring?"
PARAPHRASE = "Which city did Anna move to in the spring?"
UNRELATED = "What is the name of Tom's cat?"


def context() -> list[Memory]:
    return [Memory(id=i, content=f"text of {i}") for i in ORDER]


def report(scope: str = "minimal") -> ClearanceReport:
    """SIMULATED: one gold memory (Paris) against five copies of a wrong claim (Rome)."""
    weights = [1.0, 0.8, 0.5, 0.3, 0.2]
    claims = {"g": ("Paris", 1.5)} | {p: ("Rome", w) for p, w in zip(COPIES, weights, strict=True)}
    config = ClearanceConfig(find_carriers=True, clearance_scope=scope)  # type: ignore[arg-type]
    world = EvidenceWorld.from_claims(claims, ties="prompt")
    return MeClearEngine(config).clear(context(), SimulatedEvaluator(world, "Paris"))


@pytest.fixture
def ledger(ledger_url: str):
    with HarmLedger(ledger_url, clock=StepClock()) as led:
        yield led


def test_minimal_scope_carriers_are_harm_for_the_question_and_its_paraphrases(ledger) -> None:
    r = report()
    assert r.carrier_ids and r.cleared_ids and not set(r.carrier_ids) & set(r.cleared_ids)
    assert set(r.carrier_ids) <= set(r.kept_ids)  # kept under minimal scope
    run = ledger.record(r, query=QUESTION, context=context())
    same = {h.memory_id: h for h in ledger.scoped_harm(QUESTION, context())}
    assert set(same) == set(r.cleared_ids) | set(r.carrier_ids)
    for mid in r.carrier_ids:
        assert same[mid].carrier and same[mid].scope == "same_query"
        assert same[mid].run_id == run.run_id and not same[mid].settled  # judge signal only
    assert not any(same[mid].carrier for mid in r.cleared_ids)
    similar = {h.memory_id: h for h in ledger.scoped_harm(PARAPHRASE, context())}
    assert set(r.carrier_ids) <= set(similar)
    assert all(similar[m].carrier and similar[m].scope == "similar_query" for m in r.carrier_ids)
    assert ledger.scoped_harm(UNRELATED, context()) == []
    prior = ledger.prior_candidate(context(), query=QUESTION)
    assert set(r.carrier_ids) <= set(prior.ids) and set(r.carrier_ids) == set(prior.carriers)
    assert not set(r.carrier_ids) & set(prior.unproven)  # a copy is never put back alone


def test_complete_scope_withheld_carriers_are_harm_too(ledger) -> None:
    r = report("complete")
    assert r.withheld_ids and set(r.withheld_ids) <= set(r.carrier_ids)
    ledger.record(r, query=QUESTION, context=context())
    harm = {h.memory_id: h.carrier for h in ledger.scoped_harm(QUESTION, context())}
    assert all(harm.get(m) is True for m in r.carrier_ids)


def test_a_reference_signal_settles_a_carrier(ledger) -> None:
    r = report()
    ledger.record(r, query=QUESTION, context=context(), success_signal="reference")
    harm = {h.memory_id: h for h in ledger.scoped_harm(QUESTION, context())}
    assert all(harm[m].carrier and harm[m].settled for m in r.carrier_ids)


def test_a_run_that_did_not_verify_quarantines_nothing(ledger) -> None:
    r = report()
    for update in ({"status": "unverified"}, {"recovered": False}):
        ledger.record(r.model_copy(update=update), query=QUESTION, context=context())
    assert ledger.scoped_harm(QUESTION, context()) == []


def test_review_does_not_count_a_carrier_beyond_carrier_proposals(ledger) -> None:
    r = report()
    ledger.record(r, query=QUESTION, context=context())
    ledger.record(r, query=PARAPHRASE + " ok", context=context())
    counted = {e.memory_id for e in ledger.evidence() if e.harmful_at is not None}
    assert counted == set(r.cleared_ids)
    assert not {p.memory_id for p in ledger.review(min_queries=1)} & set(r.carrier_ids)
    assert set(r.carrier_ids) <= {p.memory_id for p in ledger.carrier_review(min_queries=2)}


def test_a_later_run_that_finds_the_carrier_helpful_lifts_it(ledger) -> None:
    r = report()
    ledger.record(r, query=QUESTION, context=context())
    lifted = r.carrier_ids[0]
    helped = r.model_copy(
        update={
            "carriers": [c for c in r.carriers if c.memory_id != lifted],
            "attributions": [
                a.model_copy(update={"shapley": 1.0, "shapley_interval": (0.5, 1.5)})
                if a.memory_id == lifted
                else a
                for a in r.attributions
            ],
        }
    )
    ledger.record(helped, query=QUESTION, context=context())
    harm = {h.memory_id for h in ledger.scoped_harm(QUESTION, context())}
    assert lifted not in harm and set(r.carrier_ids) - {lifted} <= harm
    # the lifted row no longer applies to questions like it either
    assert lifted not in {h.memory_id for h in ledger.scoped_harm(PARAPHRASE, context())}


def test_a_carrier_does_not_revive_a_rooted_clearance_a_later_run_outweighed(ledger) -> None:
    r = report()
    x = r.cleared_ids[0]
    ledger.record(r, query=QUESTION, context=context())  # full run: rooted harm for x
    kept_all = {"cleared": [], "kept": [*r.kept, *r.cleared], "carriers": []}
    helpful = [
        a.model_copy(update={"shapley": 1.0, "shapley_interval": (0.5, 1.5)})
        if a.memory_id == x
        else a
        for a in r.attributions
    ]
    ledger.record(
        r.model_copy(update={**kept_all, "attributions": helpful}),
        query=QUESTION,
        context=context(),
    )
    assert x not in {e.memory_id for e in ledger.evidence() if e.harmful_at is not None}
    carried = r.model_copy(
        update={**kept_all, "carriers": [r.carriers[0].model_copy(update={"memory_id": x})]}
    )
    ledger.record(carried, query=QUESTION, context=context())
    harm = {h.memory_id: h for h in ledger.scoped_harm(QUESTION, context())}
    assert harm[x].carrier  # quarantined again for the question, but no review evidence
    assert x not in {e.memory_id for e in ledger.evidence() if e.harmful_at is not None}


def test_background_mode_withholds_the_carriers_on_the_next_ask(ledger) -> None:
    r = report()
    ledger.record(r, query=QUESTION, context=context())
    withheld = {w.memory_id: w.carrier for w in verified_harm(ledger, PARAPHRASE, context())}
    assert all(withheld.get(m) is True for m in r.carrier_ids)
    assert verified_harm(ledger, UNRELATED, context()) == []
