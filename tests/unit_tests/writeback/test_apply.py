"""An accepted review retires the memory from each kind of store, reversibly, with its
audit trail; a dry run changes nothing; applying twice, a memory deleted upstream, an edit
since the review and a store that refuses are each a clear outcome with nothing lost."""

from __future__ import annotations

import asyncio
import datetime

import pytest

from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.ledger.tombstones import (
    active_tombstone,
    pending_decisions,
    tombstone_events,
)
from meclear_integrations.writeback import (
    aapply_reviews,
    accept_review,
    adapter_for,
    apply_reviews,
    arestore_memory,
    reject_review,
    restore_memory,
)


def _apply(ledger, harness, mode, *args, **kwargs):
    if mode == "async":
        return asyncio.run(
            aapply_reviews(ledger, harness.store, *args, **kwargs, **harness.options)
        )
    return apply_reviews(ledger, harness.store, *args, **kwargs, **harness.options)


def _restore(ledger, harness, mode, memory_id, **kwargs):
    if mode == "async":
        return asyncio.run(
            arestore_memory(ledger, harness.store, memory_id, **kwargs, **harness.options)
        )
    return restore_memory(ledger, harness.store, memory_id, **kwargs, **harness.options)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_accepted_review_retires_and_restore_brings_it_back_exactly(ledger, harness, mode):
    before = harness.exact("stale")
    assert "stale" in harness.retrieved()
    proposal = ledger.review()[0]
    decision = accept_review(ledger, "stale", actor="ana", reason="moved to Lisbon")
    assert decision.run_ids == proposal.run_ids and decision.content_hash == proposal.content_hash

    dry = _apply(ledger, harness, mode, dry_run=True)
    assert [(o.memory_id, o.action) for o in dry] == [("stale", "would_retire")]
    assert "stale" in harness.retrieved() and tombstone_events(ledger) == []

    (done,) = _apply(ledger, harness, mode, actor="ops")
    assert done.action == "retired" and done.changed
    assert "stale" not in harness.retrieved()
    assert sorted(harness.retrieved()) == ["bg", "g"]
    (event,) = tombstone_events(ledger, "stale")
    assert (event.event, event.actor, event.reason) == ("retired", "ops", "moved to Lisbon")
    assert event.run_ids == proposal.run_ids and event.decision_id == decision.decision_id
    assert event.store.startswith(harness.kind) and event.payload
    assert pending_decisions(ledger) == []
    assert "stale" not in {p.memory_id for p in ledger.review()}  # retired: not proposed again

    back = _restore(ledger, harness, mode, "stale", actor="ana", reason="wrong call")
    assert back.action == "restored"
    assert harness.exact("stale") == before
    assert "stale" in harness.retrieved()
    assert [e.event for e in tombstone_events(ledger, "stale")] == ["retired", "restored"]
    assert active_tombstone(ledger, "stale") is None
    assert ledger.history("stale").restored  # review waits for new evidence
    assert ledger.review() == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_review_applied_twice_changes_nothing(ledger, harness, mode):
    accept_review(ledger, "stale", actor="ana")
    (first,) = _apply(ledger, harness, mode)
    assert first.action == "retired"
    assert _apply(ledger, harness, mode) == []  # nothing pending
    (again,) = _apply(ledger, harness, mode, ["stale"])
    assert again.action == "already_retired" and "nothing changed" in again.message
    accept_review(ledger, "stale", actor="bo")  # accepted a second time
    (twice,) = _apply(ledger, harness, mode)
    assert twice.action == "already_retired" and twice.tombstone_id == first.tombstone_id
    assert [e.event for e in tombstone_events(ledger)] == ["retired"]
    (named,) = _apply(ledger, harness, mode, ["g"])
    assert named.action == "not_accepted" and "g" in harness.retrieved()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_memory_deleted_upstream_is_reported_and_settled(ledger, harness, mode):
    accept_review(ledger, "stale", actor="ana")
    harness.drop("stale")
    (dry,) = _apply(ledger, harness, mode, dry_run=True)
    assert dry.action == "would_record_missing" and tombstone_events(ledger) == []
    (outcome,) = _apply(ledger, harness, mode)
    assert outcome.action == "missing" and "nothing lost" in outcome.message
    (event,) = tombstone_events(ledger)
    assert event.event == "missing" and event.payload is None
    assert sorted(harness.retrieved()) == ["bg", "g"]
    assert pending_decisions(ledger) == []
    assert _restore(ledger, harness, mode, "stale").action == "not_in_tombstone"


def test_an_edit_since_the_review_is_not_retired(ledger, harness):
    accept_review(ledger, "stale", actor="ana")
    harness.replace("stale", "Ana lives in Lisbon now")
    (outcome,) = apply_reviews(ledger, harness.store, **harness.options)
    assert outcome.action == "changed" and "review it again" in outcome.message
    assert "stale" in harness.retrieved() and tombstone_events(ledger) == []
    assert [d.memory_id for d in pending_decisions(ledger)] == ["stale"]


def test_a_restore_never_overwrites_another_memory_under_the_id(ledger, harness):
    accept_review(ledger, "stale", actor="ana")
    apply_reviews(ledger, harness.store, **harness.options)
    harness.replace("stale", "a new memory that reuses the id")
    outcome = restore_memory(ledger, harness.store, "stale", **harness.options)
    assert outcome.action == "conflict"
    assert active_tombstone(ledger, "stale") is not None  # it still holds the memory


def test_a_rejection_after_an_acceptance_wins(ledger, harness):
    accept_review(ledger, "stale", actor="ana")
    reject_review(ledger, "stale", actor="bo", reason="still true for some users")
    assert apply_reviews(ledger, harness.store, **harness.options) == []
    assert "stale" in harness.retrieved()


def test_a_store_that_refuses_keeps_the_memory(ledger):
    from langchain_core.vectorstores import InMemoryVectorStore

    from tests.unit_tests.writeback.conftest import _langchain

    class Refusing(InMemoryVectorStore):
        def delete(self, ids=None, **kwargs):
            raise PermissionError("read-only replica")

    harness = _langchain()
    store = Refusing(harness.store.embedding)
    store.store = dict(harness.store.store)
    accept_review(ledger, "stale", actor="ana")
    (outcome,) = apply_reviews(ledger, store)
    assert outcome.action == "failed" and "read-only replica" in outcome.message
    assert store.get_by_ids(["stale"])
    assert [e.event for e in tombstone_events(ledger)] == ["retired", "failed"]
    assert active_tombstone(ledger, "stale") is None
    assert [d.memory_id for d in pending_decisions(ledger)] == ["stale"]


def test_metadata_json_cannot_hold_is_refused_before_anything_is_removed(ledger):
    from langchain_core.documents import Document

    from tests.unit_tests.writeback.conftest import _langchain

    harness = _langchain()
    stale = harness.store.get_by_ids(["stale"])[0]
    when = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    harness.store.add_documents(
        [Document(id="stale", page_content=stale.page_content, metadata={"at": when})],
        ids=["stale"],
    )
    accept_review(ledger, "stale", actor="ana")
    (outcome,) = apply_reviews(ledger, harness.store)
    assert outcome.action == "not_retired" and "not JSON" in outcome.message
    assert harness.store.get_by_ids(["stale"]) and tombstone_events(ledger) == []


def test_accepting_needs_a_proposal_unless_told(ledger):
    with pytest.raises(ConfigurationError, match="not among the review proposals"):
        accept_review(ledger, "g", actor="ana")
    decision = accept_review(ledger, "g", actor="ana", require_proposal=False)
    assert decision.content_hash is None and decision.run_ids == []


def test_the_same_annotation_recorded_twice_is_one_decision(ledger):
    first = accept_review(ledger, "stale", source="langsmith", source_id="fb-1")
    second = accept_review(ledger, "stale", source="langsmith", source_id="fb-1")
    assert first == second and len(pending_decisions(ledger)) == 1


def test_unknown_stores_and_bad_options_are_refused():
    with pytest.raises(ConfigurationError, match="no write-back adapter for dict"):
        adapter_for({})
    pytest.importorskip("langgraph")
    from langgraph.store.memory import InMemoryStore

    with pytest.raises(ConfigurationError, match="namespace"):
        adapter_for(InMemoryStore())
    with pytest.raises(ConfigurationError, match="non-empty tuple"):
        adapter_for(InMemoryStore(), namespace="users")


def test_a_langgraph_id_can_carry_its_namespace(ledger):
    pytest.importorskip("langgraph")
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore()
    store.put(("users", "ana"), "stale", {"content": "text of stale"})
    accept_review(ledger, "stale", actor="ana")

    def split(memory_id: str):
        return ("users", "ana"), memory_id

    (outcome,) = apply_reviews(ledger, store, split=split)
    assert outcome.action == "retired" and store.get(("users", "ana"), "stale") is None
    assert restore_memory(ledger, store, "stale", split=split).action == "restored"
    assert store.get(("users", "ana"), "stale").value == {"content": "text of stale"}


def test_the_package_example_runs():
    import doctest

    import meclear_integrations.writeback as package

    result = doctest.testmod(package, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_a_restore_closes_the_tombstone_of_a_concurrent_apply(ledger, harness):
    from meclear_integrations.ledger.tombstones import open_tombstones, record_event

    before = harness.exact("stale")
    accept_review(ledger, "stale", actor="ana")
    adapter = adapter_for(harness.store, **harness.options)
    stored = adapter.fetch("stale")
    # two applies at one moment: each wrote its tombstone before either removed the memory
    for who in ("ops-1", "ops-2"):
        record_event(
            ledger,
            memory_id="stale",
            event="retired",
            store=adapter.label,
            actor=who,
            payload=stored.payload,
        )
    adapter.remove("stale")
    assert len(open_tombstones(ledger, "stale")) == 2
    assert restore_memory(ledger, harness.store, "stale", **harness.options).action == "restored"
    assert open_tombstones(ledger, "stale") == [] and harness.exact("stale") == before
