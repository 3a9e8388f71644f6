"""Verified harm by content: the same text under a new id, normalised, near-duplicates."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, event, inspect

from meclear_integrations import Memory
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.ledger import schema as tables
from meclear_integrations.ledger.content import (
    LedgerHarmIndex,
    band_keys,
    memory_tokens,
    normalized_text,
    text_signature,
)
from meclear_integrations.ledger.migrations import SCHEMA_VERSION, current_version
from meclear_integrations.ledger.scope import jaccard
from tests.support.ledger import clear

QUESTION = "What can I cook for the user tonight?"
HARMFUL = "User is allergic to peanuts."


def context(bad_id: str = "bad", bad_text: str = HARMFUL) -> list[Memory]:
    return [
        Memory(id="good", content="User lives in Paris and cooks Thai food."),
        Memory(id=bad_id, content=bad_text),
    ]


def record_harm(ledger: HarmLedger) -> str:
    ctx = context()
    report = clear(ctx, gold={"good"}, faults={"bad"})
    assert report.cleared_ids == ["bad"]
    return ledger.record(report, query=QUESTION, context=ctx, success_signal="reference").run_id


@pytest.fixture
def ledger(ledger_url: str):
    with HarmLedger(ledger_url) as led:
        yield led


def test_normalised_text_and_tokens_keep_what_changes_a_fact() -> None:
    assert normalized_text("  USER is allergic\tto peanuts!! ") == "user is allergic to peanuts"
    assert "not" in memory_tokens("User is not allergic to peanuts.")
    same = text_signature("User is allergic to the peanuts")
    assert jaccard(same, text_signature(HARMFUL)) == 1.0
    assert band_keys(same) == band_keys(text_signature(HARMFUL)) and len(band_keys(same)) == 8
    assert band_keys([]) == []


@pytest.mark.parametrize(
    ("text", "memory_id", "match"),
    [
        (HARMFUL, "bad", "same_id"),
        (HARMFUL, "bad-again", "same_text"),
        (HARMFUL, None, "same_text"),
        ("user is  allergic to PEANUTS", "x", "normalised_text"),
        ("The user is allergic to the peanuts, sadly!", "x", None),  # adds a content word
        ("User is allergic to the peanuts!", "x", "near_duplicate"),
        ("User is not allergic to peanuts.", "x", None),  # a negation is another fact
        ("User likes green tea.", "x", None),
    ],
)
def test_the_index_finds_the_text_under_any_id(ledger, text, memory_id, match) -> None:
    run_id = record_harm(ledger)
    found = LedgerHarmIndex(ledger).known_harm(text, memory_id)
    if match is None:
        assert found is None
        return
    assert found is not None and found.match == match
    assert found.memory_id == "bad" and found.run_id == run_id


def test_near_duplicate_threshold_is_configurable(ledger) -> None:
    record_harm(ledger)
    text = "The user is allergic to the peanuts, sadly!"  # Jaccard 3/4
    assert LedgerHarmIndex(ledger, threshold=0.75).known_harm(text).match == "near_duplicate"
    with pytest.raises(ValueError):
        LedgerHarmIndex(ledger, threshold=0.0)


def test_a_restore_lifts_the_match(ledger) -> None:
    record_harm(ledger)
    ledger.restore("bad", reason="it was right after all")
    index = LedgerHarmIndex(ledger)
    assert index.known_harm(HARMFUL, "other") is None
    assert index.known_harm("User is allergic to the peanuts!", "x") is None


def test_an_unverified_run_indexes_nothing(ledger) -> None:
    ctx = context()
    report = clear(ctx, gold={"nobody"}, faults={"bad"})  # never recovers
    ledger.record(report, query=QUESTION, context=ctx)
    assert LedgerHarmIndex(ledger).known_harm(HARMFUL) is None


def test_clearance_recognises_the_text_under_a_new_id_in_one_read(ledger) -> None:
    run_id = record_harm(ledger)
    statements: list[str] = []
    event.listen(
        ledger.engine, "before_cursor_execute", lambda c, cur, st, *a: statements.append(st)
    )
    harm = ledger.scoped_harm(QUESTION, context(bad_id="bad-2"))
    assert [(h.memory_id, h.scope, h.run_id) for h in harm] == [("bad-2", "same_query", run_id)]
    assert len([s for s in statements if "SELECT" in s.upper()]) == 1
    prior = ledger.prior_candidate(context(bad_id="bad-3"), query=QUESTION)
    assert prior.ids == ("bad-3",) and prior.scoped
    # another text under the old id is not the harmful memory
    assert ledger.scoped_harm(QUESTION, context(bad_text="User is allergic to cats.")) == []


def test_lookup_reads_are_bounded_whatever_the_history(ledger) -> None:
    for _ in range(30):
        record_harm(ledger)
    statements: list[str] = []
    event.listen(
        ledger.engine, "before_cursor_execute", lambda c, cur, st, *a: statements.append(st)
    )
    assert LedgerHarmIndex(ledger).known_harm("User is allergic to the peanuts!") is not None
    reads = [s for s in statements if "SELECT" in s.upper()]
    assert len(reads) <= 4 and all("LIMIT" in s.upper() for s in reads)


def test_the_migration_indexes_an_existing_ledger(ledger_url: str) -> None:
    with HarmLedger(ledger_url, store_text=True) as ledger:
        run_id = record_harm(ledger)
        with ledger.engine.begin() as conn:  # back to a version-3 database
            tables.harm_text_keys.drop(conn)
            tables.harm_texts.drop(conn)
            conn.exec_driver_sql("DROP INDEX ix_meclear_memory_scopes_content")
            conn.execute(delete(tables.schema_version).where(tables.schema_version.c.version > 3))
    with HarmLedger(ledger_url) as ledger:  # migrates to version 4
        with ledger.engine.connect() as conn:
            assert current_version(conn) == SCHEMA_VERSION >= 4
            names = {i["name"] for i in inspect(conn).get_indexes("meclear_memory_scopes")}
            assert "ix_meclear_memory_scopes_content" in names
        found = LedgerHarmIndex(ledger).known_harm("user is allergic to peanuts", "new")
        assert found is not None and found.match == "normalised_text" and found.run_id == run_id
        near = LedgerHarmIndex(ledger).known_harm("User is allergic to the peanuts!", "new")
        assert near is not None and near.match == "near_duplicate"


def test_a_bulk_load_indexes_the_same_texts(ledger) -> None:
    ctx = context()
    report = clear(ctx, gold={"good"}, faults={"bad"})
    entries = [
        (report, {"query": f"{QUESTION} ({i})", "context": ctx, "run_id": f"bulk-{i}"})
        for i in range(3)
    ]
    assert ledger.record_many(entries) == 3
    found = LedgerHarmIndex(ledger).known_harm("User is allergic to the peanuts!", "x")
    assert found is not None and found.match == "near_duplicate"
    assert found.run_id.startswith("bulk-")
