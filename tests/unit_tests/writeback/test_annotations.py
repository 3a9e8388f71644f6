"""Reviewers' marks in LangSmith, Phoenix and Langfuse become ledger decisions once each,
only for proposed memories; ambiguous or unrelated marks are skipped with a reason."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from meclear_integrations.ledger import HarmLedger
from meclear_integrations.ledger.tombstones import decisions, pending_decisions
from meclear_integrations.writeback import apply_reviews
from meclear_integrations.writeback.annotations import (
    LANGFUSE_NAME,
    LANGSMITH_KEY,
    PHOENIX_NAME,
    langfuse_decisions,
    langsmith_decisions,
    phoenix_decisions,
    verdict_of,
)
from tests.support.ledger import clear, memories

QUESTIONS = ("Where does Ana live?", "Which city is Ana's home?", "Ana lives where?")


@pytest.fixture
def ledger(tmp_path):
    with HarmLedger(tmp_path / "ledger.db") as ledger:
        for i, q in enumerate(QUESTIONS):
            context = memories("g", "stale", "bg")
            ledger.record(
                clear(context, {"g"}, {"stale"}),
                query=q,
                context=context,
                trace_run_id=f"00000000-0000-0000-0000-00000000000{i}",
                trace_system="langchain",
            )
        yield ledger


class FakeLangSmith:
    def __init__(self, feedback):
        self.feedback = feedback
        self.asked = []

    def list_feedback(self, *, run_ids, feedback_key):
        self.asked.append((sorted(run_ids), feedback_key))
        return [f for f in self.feedback if str(f.run_id) in run_ids and f.key in feedback_key]


def _feedback(run, **fields):
    base = {
        "id": uuid.uuid4(),
        "run_id": run,
        "key": LANGSMITH_KEY,
        "score": None,
        "value": None,
        "comment": None,
        "extra": None,
        "feedback_source": SimpleNamespace(metadata={"user_name": "ana"}),
    }
    return SimpleNamespace(**{**base, **fields})


def test_langsmith_feedback_accepts_once_and_applies(ledger) -> None:
    from tests.unit_tests.writeback.conftest import _langchain

    run = "00000000-0000-0000-0000-000000000001"
    marks = [
        _feedback(run, score=1, comment="outdated address"),
        _feedback(run, value="reject", extra={"memory_id": "g"}),  # not proposed
        _feedback(run, key="correctness", score=0),  # another key
    ]
    client = FakeLangSmith(marks)
    result = langsmith_decisions(ledger, client=client)
    assert [d.memory_id for d in result.recorded] == ["stale"]
    (decision,) = result.recorded
    assert (decision.actor, decision.reason, decision.source) == (
        "ana",
        "outdated address",
        "langsmith",
    )
    assert decision.source_id == str(marks[0].id) and len(decision.run_ids) == 3
    assert result.skipped == [(str(marks[1].id), "'g' is not proposed")]
    assert len(client.asked[0][0]) == 3  # the traced runs of the evidence
    again = langsmith_decisions(ledger, client=client)
    assert again.recorded == result.recorded and len(decisions(ledger)) == 1
    harness = _langchain()
    (outcome,) = apply_reviews(ledger, harness.store)
    assert outcome.action == "retired" and harness.store.get_by_ids(["stale"]) == []


def test_phoenix_span_annotations_map_through_the_spans_given(ledger) -> None:
    run = ledger.runs(limit=1)[0].run_id
    found = [
        {
            "id": "a1",
            "span_id": "abcdef0123456789",
            "name": PHOENIX_NAME,
            "result": {"label": "accept", "explanation": "stale"},
            "user_id": "reviewer-7",
        },
        {"id": "a2", "span_id": "ffff000011112222", "result": {"label": "accept"}},
        {"id": "a3", "span_id": "abcdef0123456789", "result": {"label": "maybe"}},
    ]
    spans_api = SimpleNamespace(get_span_annotations=lambda **kw: found)
    client = SimpleNamespace(spans=spans_api)
    result = phoenix_decisions(
        ledger, {"abcdef0123456789": run, "ffff000011112222": "unknown"}, project="p", client=client
    )
    assert [(d.memory_id, d.actor, d.source) for d in result.recorded] == [
        ("stale", "reviewer-7", "phoenix")
    ]
    assert [s[0] for s in result.skipped] == ["a2", "a3"]
    assert "holds no proposal" in result.skipped[0][1] and "neither" in result.skipped[1][1]


def test_langfuse_scores_page_through_and_reject_wins_last(ledger) -> None:
    trace = "00000000-0000-0000-0000-000000000002"
    pages = {
        None: SimpleNamespace(
            data=[
                SimpleNamespace(
                    id="s1",
                    name=LANGFUSE_NAME,
                    value="accept",
                    subject=SimpleNamespace(kind="trace", id=trace),
                    metadata={},
                    author_user_id="u1",
                    comment="wrong city",
                )
            ],
            meta=SimpleNamespace(cursor="next"),
        ),
        "next": SimpleNamespace(
            data=[
                SimpleNamespace(
                    id="s2",
                    value=0.0,
                    trace_id=None,
                    subject=None,
                    metadata={"memory_id": "stale"},
                    author_user_id="u2",
                    comment="still true",
                )
            ],
            meta=SimpleNamespace(cursor=None),
        ),
    }
    scores = SimpleNamespace(get_many=lambda *, name, limit, cursor: pages[cursor])
    client = SimpleNamespace(api=SimpleNamespace(scores=scores))
    result = langfuse_decisions(ledger, client=client)
    assert [(d.decision, d.actor) for d in result.recorded] == [
        ("accepted", "u1"),
        ("rejected", "u2"),
    ]
    assert pending_decisions(ledger) == []  # the later rejection wins


def test_verdicts() -> None:
    assert verdict_of("Accept") == "accepted" and verdict_of("keep") == "rejected"
    assert verdict_of(None, 1) == "accepted" and verdict_of(None, 0.0) == "rejected"
    assert verdict_of("stale", None) is None and verdict_of(None, True) == "accepted"
