"""Review: consistent, verified, repeated harm only; ranked; exported; never deleting."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.ledger.review import (
    QueryEvidence,
    proposals_csv,
    proposals_json,
    rank_proposals,
    wilson_lower_bound,
)
from tests.support.clocks import StepClock
from tests.support.ledger import clear, evaluator, memories


@pytest.fixture
def ledger(ledger_url: str):
    with HarmLedger(ledger_url, clock=StepClock()) as led:
        yield led


def test_wilson_lower_bound() -> None:
    assert wilson_lower_bound(0, 0) == 0.0
    assert wilson_lower_bound(2, 2) == pytest.approx(0.3424, abs=1e-4)
    assert wilson_lower_bound(10, 10) == pytest.approx(0.7225, abs=1e-4)
    assert wilson_lower_bound(5, 10) < wilson_lower_bound(5, 5)
    with pytest.raises(ValueError):
        wilson_lower_bound(1, 2, confidence=1.0)


def record_harm(ledger: HarmLedger, fault: str, query: str, gold: str = "g") -> None:
    context = memories(gold, fault, "bg")
    ledger.record(clear(context, {gold}, {fault}), query=query, context=context)


def test_needs_n_distinct_queries(ledger: HarmLedger) -> None:
    record_harm(ledger, "f", "q1")
    record_harm(ledger, "f", "q1")  # the same query again is not new evidence
    assert ledger.review(min_queries=2) == []
    record_harm(ledger, "f", "q2")
    [proposal] = ledger.review(min_queries=2)
    assert proposal.memory_id == "f" and proposal.harmful_queries == 2
    assert proposal.beneficial_queries == 0 and proposal.consistency == 1.0
    assert proposal.lower_bound == pytest.approx(wilson_lower_bound(2, 2))
    assert proposal.mean_shapley is not None and proposal.mean_shapley < 0
    assert len(proposal.run_ids) == 2 and len(proposal.query_ids) == 2
    assert ledger.review(min_queries=3) == []


def test_ranked_by_the_confidence_bound(ledger: HarmLedger) -> None:
    for i in range(4):
        record_harm(ledger, "often", f"a{i}")
    for i in range(2):
        record_harm(ledger, "twice", f"b{i}")
    assert [p.memory_id for p in ledger.review()] == ["often", "twice"]
    assert [p.rank for p in ledger.review()] == [1, 2]


def test_beneficial_evidence_breaks_consistency(ledger: HarmLedger) -> None:
    record_harm(ledger, "m", "q1")
    record_harm(ledger, "m", "q2")
    # for two other queries m is the evidence (a full attribution finds it beneficial)
    for q in ("q3", "q4"):
        context = memories("m", "f", "bg")
        ledger.record(clear(context, {"m"}, {"f"}), query=q, context=context)
    history = ledger.history("m")
    assert any(o.memory.shapley and o.memory.shapley > 0 for o in history.observations)
    assert [p.memory_id for p in ledger.review(min_queries=2)] == ["f"]  # m: 2 / 4 < 0.8
    # q3 and q4 need m (a contribution clear of zero): it is never proposed, however lenient
    assert "m" not in {p.memory_id for p in ledger.review(min_queries=1, min_consistency=0.0)}
    verdicts = sorted(
        (e.query_id, e.verdict, e.needed) for e in ledger.evidence() if e.memory_id == "m"
    )
    q = ledger.query_id
    assert verdicts == sorted(
        [
            (q("q1"), "harmful", False),
            (q("q2"), "harmful", False),
            (q("q3"), "beneficial", True),
            (q("q4"), "beneficial", True),
        ]
    )


def test_helpful_but_not_needed_queries_count_for_the_memory() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)

    def item(query: str, harmful: bool) -> QueryEvidence:
        return QueryEvidence(
            memory_id="m",
            content_hash="h",
            query_id=query,
            harmful_at=at if harmful else None,
            beneficial_at=None if harmful else at,
        )

    evidence = [item("q1", True), item("q2", True), item("q3", False), item("q4", False)]
    assert rank_proposals(evidence, min_queries=2) == []  # 2 / 4 < 0.8
    [p] = rank_proposals(evidence, min_queries=2, min_consistency=0.5)
    assert (p.harmful_queries, p.beneficial_queries, p.consistency) == (2, 2, 0.5)
    assert p.observed_queries == 4
    needed = [*evidence[:3], evidence[3].model_copy(update={"needed": True})]
    assert rank_proposals(needed, min_queries=1, min_consistency=0.0) == []


def test_unverified_runs_and_restores_do_not_count(ledger: HarmLedger) -> None:
    for q in ("q1", "q2"):
        context = memories("f", "bg")  # no gold memory: nothing recovers
        report = MeClearEngine(ClearanceConfig()).clear(context, evaluator(set(), {"f"}))
        ledger.record(report, query=q, context=context)
    assert ledger.review(min_queries=1) == []
    record_harm(ledger, "f", "q3")
    record_harm(ledger, "f", "q4")
    assert [p.memory_id for p in ledger.review()] == ["f"]
    ledger.restore("f", reason="reviewed: it is right")
    assert ledger.review() == []
    record_harm(ledger, "f", "q5")
    assert ledger.review() == []  # one new query since the restore
    record_harm(ledger, "f", "q6")
    [p] = ledger.review()
    assert p.harmful_queries == 2  # only the evidence after the restore


def test_exports(ledger: HarmLedger) -> None:
    record_harm(ledger, "=cmd|' /C calc'!A0", "q1")
    record_harm(ledger, "=cmd|' /C calc'!A0", "q2")
    proposals = ledger.review()
    rows = list(csv.DictReader(io.StringIO(proposals_csv(proposals))))
    assert rows[0]["memory_id"].startswith("'=")  # no spreadsheet formula
    assert int(rows[0]["harmful_queries"]) == 2
    document = json.loads(proposals_json(proposals, namespace="default", min_queries=2))
    assert document["proposals"][0]["memory_id"] == "=cmd|' /C calc'!A0"
    assert "never deletes" in document["note"] and document["min_queries"] == 2
