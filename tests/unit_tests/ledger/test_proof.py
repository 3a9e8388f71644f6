"""Evidence-only harm: a guided clearance counts against a member only once that member's
own removal was proven; members that only rode along in a verified union earn nothing."""

from __future__ import annotations

import pytest

from meclear_integrations.core.prior import PriorCandidate
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.ledger.proof import proven_members, split_members
from tests.support.clocks import StepClock
from tests.support.ledger import clear, memories


@pytest.fixture
def ledger(ledger_url: str):
    with HarmLedger(ledger_url, clock=StepClock()) as led:
        yield led


def test_split_members_reads_each_put_back_verdict() -> None:
    tried = [(["a"], False), (["a", "b"], False), (["a", "c"], True), (["a", "b", "c"], True)]
    assert split_members(["a", "b", "c"], tried) == ({"c"}, {"b"})  # a: never put back
    assert proven_members(["a"], [([], False), (["a"], True)]) == {"a"}  # C_0 failed
    assert split_members(["a"], [(["a"], True)]) == (set(), set())  # C_0 not recorded


def test_a_rider_is_put_back_once_acquitted_and_never_reviewed(ledger: HarmLedger) -> None:
    context = memories("g", "f", "c", "bg")
    # a guided union {f, c} verified with nothing put back: neither member proven
    unproven_union = clear(context, {"g"}, {"f"}, prior=["f", "c"])
    assert unproven_union.clearance_search == "prior"
    ledger.record(unproven_union, query="q1", context=context)
    assert ledger.prior_candidate(context) == PriorCandidate(ids=("f", "c"), unproven=("f", "c"))
    assert ledger.review(min_queries=1) == []  # a union alone is evidence against no one

    # the next query gets the union with both members to put back: f back fails (proven),
    # c back still recovers (acquitted: it only rode along)
    prior = ledger.prior_candidate(context)
    tested = clear(context, {"g"}, {"f"}, prior=prior)
    assert tested.cleared_ids == ["f", "c"]  # the verified union stays the clearance
    assert [(c.memory_ids, c.recovered) for c in tested.candidates[2:]] == [
        (["c"], False),
        (["f"], True),
    ]
    ledger.record(tested, query="q2", context=context)
    assert ledger.prior_candidate(context) == PriorCandidate(ids=("f", "c"), unproven=())

    # f is proven, but only by runs that took it from the ledger: a guided run repeats a
    # harm proven elsewhere and never makes a question count in review (issue 24)
    assert ledger.review(min_queries=1) == []
    for q in ("q3", "q4"):  # full runs attribute f on two questions of their own
        ledger.record(clear(context, {"g"}, {"f"}), query=q, context=context)
    [proposal] = ledger.review(min_queries=2)
    assert proposal.memory_id == "f" and proposal.harmful_queries == 2
    assert {e.memory_id for e in ledger.evidence() if e.harmful_at is not None} == {"f"}

    # a repeat pays no put-back: both members' contributions are known
    third = clear(context, {"g"}, {"f"}, prior=ledger.prior_candidate(context))
    assert len(third.candidates) == 2 and third.cleared_ids == ["f", "c"]


def test_full_runs_attribute_and_a_restore_resets_the_proof(ledger: HarmLedger) -> None:
    context = memories("g", "f", "bg")
    for q in ("q1", "q2"):
        ledger.record(clear(context, {"g"}, {"f"}), query=q, context=context)
    assert [p.memory_id for p in ledger.review()] == ["f"]  # attributed in full runs
    assert ledger.prior_candidate(context) == PriorCandidate(ids=("f",), unproven=())

    ledger.restore("f", reason="a person checked it")
    assert ledger.prior_candidate(context) == PriorCandidate()
    assert ledger.review(min_queries=1) == []
    # new evidence after the restore: a guided union whose members were never tested since
    union = clear(memories("g", "f", "x", "bg"), {"g"}, {"f"}, prior=["f", "x"])
    ledger.record(union, query="q3", context=memories("g", "f", "x", "bg"))
    assert ledger.prior_candidate(context) == PriorCandidate(ids=("f",), unproven=("f",))
    assert ledger.review(min_queries=1) == []  # proof before the restore does not count


def test_copies_that_recover_alone_are_acquitted_only_together() -> None:
    # C = {a, b, c}; b and c each recover put back alone
    alone = [(["a", "b", "c"], True), (["a", "c"], True), (["a", "b"], True)]
    assert split_members(["a", "b", "c"], alone) == (set(), set())  # union never tested
    union_fails = [*alone, (["a"], False)]
    assert split_members(["a", "b", "c"], union_fails) == ({"b", "c"}, set())  # jointly
    union_recovers = [*alone, (["a"], True)]
    assert split_members(["a", "b", "c"], union_recovers) == (set(), {"b", "c"})
    # both members recover alone: all of C put back is the full context, never an acquittal
    assert split_members(["a", "b"], [(["a"], True), (["b"], True), ([], True)]) == (
        set(),
        set(),
    )


def test_a_copy_put_back_beside_a_withheld_carrier_is_not_acquitted() -> None:
    # the run kept carrier k removed and put back c alone (recovers), then c with k (fails)
    tried = [(["a", "c", "k"], True), (["a", "k"], True), (["a"], False)]
    assert split_members(["a", "c", "k"], tried) == ({"c"}, set())


def test_the_engine_puts_redundant_copies_back_together() -> None:
    from meclear_integrations import ClearanceConfig, MeClearEngine
    from meclear_integrations.simulation.evaluator import SimulatedEvaluator
    from meclear_integrations.simulation.world import EvidenceWorld

    # SIMULATED: the current fact (weight 1.5) against three stale copies (weight 1 each):
    # any two copies removed recover; s1's own contribution is known, s2 and s3 are not
    claims = {"g": ("NewCo", 1.5)} | {c: ("OldCo", 1.0) for c in ("s1", "s2", "s3")}
    world = EvidenceWorld.from_claims(claims)
    context = memories("s1", "s2", "s3", "g")
    prior = PriorCandidate(ids=("s1", "s2", "s3"), unproven=("s2", "s3"), scoped=True)
    report = MeClearEngine(ClearanceConfig()).clear(
        context, SimulatedEvaluator(world, "NewCo"), prior_harmful=prior
    )
    assert report.clearance_search == "prior" and set(report.cleared_ids) == {"s1", "s2", "s3"}
    tried = [(sorted(c.memory_ids), c.recovered) for c in report.candidates[2:]]
    # each put back alone recovers; put back together (only s1 cleared) they fail
    assert tried == [(["s1", "s3"], True), (["s1", "s2"], True), (["s1"], False)]
    proven, acquitted = split_members(report.cleared_ids, tried)
    assert acquitted == set() and proven == {"s2", "s3"}
