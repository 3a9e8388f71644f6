"""Scoped harm: a verified harm applies to its question and questions like it, read in O(K)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from sqlalchemy import delete, event, select

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.prior import PriorCandidate
from meclear_integrations.ledger import HarmLedger, ScopedHarm
from meclear_integrations.ledger import schema as tables
from meclear_integrations.ledger.scope import LEXICAL_THRESHOLD, content_tokens, jaccard
from tests.support.clocks import StepClock
from tests.support.ledger import clear, memories

DOG = "What is Sam's dog called?"
DENTIST = "When is Sam's dentist appointment?"


def dentist_context() -> list[Memory]:
    return [
        Memory(id="old-dentist", content="Sam's dentist appointment is on March 3."),
        Memory(id="new-dentist", content="Sam moved the dentist appointment to May 9."),
        Memory(id="dog", content="Sam's dog is called Rex."),
    ]


def record_dentist_fault(ledger: HarmLedger, **kwargs) -> str:
    """A full run on DENTIST clears old-dentist (verified with the reference)."""
    context = dentist_context()
    report = clear(context, gold={"new-dentist"}, faults={"old-dentist"})
    assert report.cleared_ids == ["old-dentist"]
    return ledger.record(report, query=DENTIST, context=context, **kwargs).run_id


@pytest.fixture
def ledger(ledger_url: str):
    with HarmLedger(ledger_url, clock=StepClock()) as led:
        yield led


def test_harm_applies_to_its_question_and_paraphrases_not_to_unrelated_ones(ledger) -> None:
    run_id = record_dentist_fault(ledger)
    context = dentist_context()
    same = ledger.scoped_harm(DENTIST, context)
    assert same == [
        ScopedHarm(
            memory_id="old-dentist",
            content_hash=same[0].content_hash,
            run_id=run_id,
            query_id=ledger.query_id(DENTIST),
            scope="same_query",
            similarity=1.0,
            carrier=False,
        )
    ]
    similar = ledger.scoped_harm("When is Sam's next dentist appointment?", context)
    assert [(h.memory_id, h.scope) for h in similar] == [("old-dentist", "similar_query")]
    assert LEXICAL_THRESHOLD <= similar[0].similarity < 1.0
    assert ledger.scoped_harm(DOG, context) == []  # an unrelated question keeps it
    assert ledger.prior_candidate(context, query=DOG) == PriorCandidate()
    scoped = ledger.prior_candidate(context, query=DENTIST)
    assert scoped.ids == ("old-dentist",) and scoped.scoped
    # unscoped (no question given): the old behaviour, any question's verified harm
    assert ledger.prior_candidate(context).ids == ("old-dentist",)
    assert ledger.prior_harmful(context, query=DOG) == []


def test_changed_text_restore_and_a_later_need_lift_the_harm(ledger) -> None:
    record_dentist_fault(ledger)
    changed = [Memory(id="old-dentist", content="edited"), *dentist_context()[1:]]
    assert ledger.scoped_harm(DENTIST, changed) == []
    ledger.restore("old-dentist", reason="checked")
    assert ledger.scoped_harm(DENTIST, dentist_context()) == []
    record_dentist_fault(ledger)  # new verified evidence after the restore
    assert [h.memory_id for h in ledger.scoped_harm(DENTIST, dentist_context())] == ["old-dentist"]
    # a later full attribution of the same question that needs the memory lifts it
    context = dentist_context()
    needs = clear(context, gold={"old-dentist"}, faults={"dog"})
    assert "old-dentist" in needs.kept_ids
    ledger.record(needs, query=DENTIST, context=context)
    assert [h.memory_id for h in ledger.scoped_harm(DENTIST, context)] == ["dog"]


def test_embeddings_decide_when_both_sides_have_one(ledger) -> None:
    record_dentist_fault(ledger, query_embedding=[1.0, 0.0, 0.0])
    context = dentist_context()
    reworded = "Which day does Sam see the tooth doctor?"  # no lexical overlap to speak of
    assert ledger.scoped_harm(reworded, context) == []
    near = ledger.scoped_harm(reworded, context, query_embedding=[0.99, 0.1, 0.0])
    assert [h.scope for h in near] == ["similar_query"] and near[0].similarity > 0.9
    far = ledger.scoped_harm(DENTIST + " x", context, query_embedding=[0.0, 1.0, 0.0])
    assert far == []  # the embedding says unrelated, whatever the words
    assert asyncio.run(ledger.ascoped_harm(DENTIST, context)) == ledger.scoped_harm(
        DENTIST, context
    )


def test_record_with_a_run_id_is_idempotent(ledger) -> None:
    first = record_dentist_fault(ledger, run_id="job-1")
    assert first == "job-1"
    again = record_dentist_fault(ledger, run_id="job-1")
    assert again == "job-1"
    assert ledger.stats()["runs"] == 1
    with ledger.engine.connect() as conn:
        s = tables.memory_scopes
        rows = conn.execute(select(s.c.memory_id, s.c.harm_runs, s.c.needed_runs)).all()
        memories_rows = conn.execute(select(tables.run_memories.c.id)).all()
    assert sorted(tuple(r) for r in rows) == [("new-dentist", 0, 1), ("old-dentist", 1, 0)]
    assert len(memories_rows) == 3
    stored = ledger.record(clear(*_trivial()), query="other", run_id="job-1")
    assert stored.query_id == ledger.query_id(DENTIST)  # the stored run, unchanged
    with pytest.raises(Exception, match="at most 36"):
        record_dentist_fault(ledger, run_id="x" * 37)


def _trivial():
    return memories("a"), {"a"}, set()


def test_concurrent_writers_of_one_run_id_store_one_run(ledger) -> None:
    errors: list[BaseException] = []

    def write() -> None:
        try:
            record_dentist_fault(ledger, run_id="job-race")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and ledger.stats()["runs"] == 1
    assert len(ledger.scoped_harm(DENTIST, dentist_context())) == 1


def test_lookup_reads_only_the_state_table(ledger) -> None:
    for i in range(5):
        record_dentist_fault(ledger)
        ledger.record(clear(memories(f"m{i}"), {f"m{i}"}, set()), query=f"q{i}")
    statements: list[str] = []

    def capture(conn, cursor, statement, *args) -> None:
        statements.append(statement)

    event.listen(ledger.engine, "before_cursor_execute", capture)
    try:
        ledger.scoped_harm(DENTIST, dentist_context())
    finally:
        event.remove(ledger.engine, "before_cursor_execute", capture)
    reads = [s for s in statements if "SELECT" in s.upper()]
    assert len(reads) == 1 and "meclear_memory_scopes" in reads[0]
    assert "meclear_runs" not in reads[0] and "meclear_run_memories" not in reads[0]


def test_version_2_backfills_the_state_from_history(ledger_url: str) -> None:
    with HarmLedger(ledger_url, clock=StepClock()) as ledger:
        record_dentist_fault(ledger)
        with ledger.engine.begin() as conn:  # back to a version-1 database with history
            conn.execute(delete(tables.memory_scopes))
            conn.execute(delete(tables.schema_version).where(tables.schema_version.c.version > 1))
            conn.execute(tables.memory_scopes.delete())
        assert ledger.scoped_harm(DENTIST, dentist_context()) == []
    with HarmLedger(ledger_url) as ledger:  # migrates: the backfill rebuilds the state
        harm = ledger.scoped_harm(DENTIST, dentist_context())
        assert [(h.memory_id, h.scope) for h in harm] == [("old-dentist", "same_query")]
        # backfilled rows have no signature: only the same question matches
        assert ledger.scoped_harm("Remind me, when is Sam's dentist appointment?", []) == []


def test_a_scoped_prior_is_tried_before_the_early_exit() -> None:
    """A fooled judge accepts the full context: only a scoped prior is verified first."""
    context = dentist_context()

    def fooled(coalition, trial) -> float:
        return 1.0  # accepts every answer, the stale one included

    plain = MeClearEngine(ClearanceConfig()).clear(
        context, fooled, prior_harmful=PriorCandidate(ids=("old-dentist",))
    )
    assert plain.early_exit and plain.cleared_ids == []
    scoped = MeClearEngine(ClearanceConfig()).clear(
        context, fooled, prior_harmful=PriorCandidate(ids=("old-dentist",), scoped=True)
    )
    assert scoped.cleared_ids == ["old-dentist"] and scoped.clearance_search == "prior"
    assert not scoped.early_exit and scoped.status == "complete" and scoped.recovered

    def stale_needed(coalition, trial) -> float:  # without it nothing passes: not applied
        return 1.0 if "old-dentist" in {m.id for m in coalition} else 0.0

    kept = MeClearEngine(ClearanceConfig()).clear(
        context, stale_needed, prior_harmful=PriorCandidate(ids=("old-dentist",), scoped=True)
    )
    assert "old-dentist" in kept.kept_ids and kept.early_exit


def test_a_known_first_run_with_a_passing_baseline_does_not_acquit(ledger) -> None:
    record_dentist_fault(ledger)
    context = dentist_context()
    prior = ledger.prior_candidate(context, query=DENTIST)
    report = MeClearEngine(ClearanceConfig()).clear(context, lambda c, t: 1.0, prior_harmful=prior)
    assert report.cleared_ids == ["old-dentist"]
    ledger.record(report, query=DENTIST, context=context)
    assert [h.memory_id for h in ledger.scoped_harm(DENTIST, context)] == ["old-dentist"]


def test_lexical_signature_words() -> None:
    assert content_tokens(DOG) == {"sam", "dog", "call"}
    assert jaccard(content_tokens(DOG), content_tokens(DENTIST)) < LEXICAL_THRESHOLD
    paraphrase = "Can you tell me again: what is Sam's dog called?"
    assert jaccard(content_tokens(DOG), content_tokens(paraphrase)) == 1.0
