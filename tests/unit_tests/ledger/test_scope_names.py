"""Name-aware question scope: questions about different people are never alike."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from meclear_integrations import Memory
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.ledger import schema as tables
from meclear_integrations.ledger.scope import (
    LEXICAL_THRESHOLD,
    content_tokens,
    jaccard,
    lexical_signature,
    name_signature,
    name_tokens,
    names_agree,
    question_similarity,
)
from meclear_integrations.runtime.hashing import content_hash
from tests.support.clocks import StepClock
from tests.support.ledger import clear

JON = "What is Jon's favorite style of dance?"
GINA = "What is Gina's favorite style of dance?"


def dance_context() -> list[Memory]:
    return [
        Memory(id="jon-true", content="Jon loves contemporary dance."),
        Memory(id="jon-stale", content="Jon's favorite dance is the tango."),
        Memory(id="gina-true", content="Gina loves contemporary dance."),
    ]


def record_jon_fault(ledger: HarmLedger) -> str:
    context = dance_context()
    report = clear(context, gold={"jon-true"}, faults={"jon-stale"})
    assert report.cleared_ids == ["jon-stale"]
    return ledger.record(report, query=JON, context=context, success_signal="reference").run_id


@pytest.fixture
def ledger(ledger_url: str):
    with HarmLedger(ledger_url, clock=StepClock()) as led:
        yield led


def test_names_are_capitalised_words_not_starting_a_sentence_possessives_and_numbers() -> None:
    assert name_tokens(JON) == {"jon"}
    assert name_tokens("Quick question: What did Caroline do at the Pride parade?") == {
        "caroline",
        "pride",
    }
    assert name_tokens("what is gina's favorite style of dance?") == {"gina"}  # possessive
    assert name_tokens("Gina's dance?") == {"gina"}  # a possessive starting the sentence
    assert name_tokens("Where did Sam go? Where did Ann go?") == {"sam", "ann"}
    assert name_tokens("Describe the dance.") == set()  # a capital starting a sentence
    assert name_tokens("When did Nate win his fourth tournament in 2022?") == {
        "nate",
        "fourth",
        "2022",
    }
    for question in (JON, "Remind me, what did Caroline do at the Pride parade?"):
        assert name_tokens(question) <= content_tokens(question)


def test_the_name_rule_keeps_different_people_apart_and_rewordings_together() -> None:
    jon, gina = content_tokens(JON), content_tokens(GINA)
    assert jaccard(jon, gina) >= LEXICAL_THRESHOLD  # the words alone would call them alike
    assert not names_agree(name_tokens(JON), jon, name_tokens(GINA), gina)
    reworded = "Remind me, what is jon's favorite style of dance?"
    assert names_agree(name_tokens(JON), jon, name_tokens(reworded), content_tokens(reworded))
    unnamed = "What is the favorite style of dance?"  # no name: not like Jon's question
    assert not names_agree(name_tokens(JON), jon, name_tokens(unnamed), content_tokens(unnamed))
    # the rule applies to the hashed signatures and to embeddings too
    sig = {q: (lexical_signature(q), name_signature(q)) for q in (JON, GINA, reworded)}
    assert set(sig[JON][1]) <= set(sig[JON][0])

    def alike(a: str, b: str, **kwargs) -> bool:
        return question_similarity(
            sig[a][0], kwargs.get("ea"), sig[b][0], kwargs.get("eb"), names=sig[a][1],
            other_names=sig[b][1],
        )[1]  # fmt: skip

    assert alike(JON, reworded) and not alike(JON, GINA)
    assert not alike(JON, GINA, ea=[1.0, 0.0], eb=[1.0, 0.0])  # cosine 1.0, other person
    assert alike(JON, reworded, ea=[1.0, 0.0], eb=[0.99, 0.05])
    unknown = question_similarity(sig[JON][0], None, sig[JON][0], None, names=[], other_names=None)
    assert unknown == (1.0, False)  # a recorded question without names: like no other


def test_name_hashes_are_keyed_and_no_word_is_stored(ledger_url: str) -> None:
    assert name_signature(JON, key="k1") != name_signature(JON, key="k2")
    assert name_signature(JON, key="k1") != name_signature(JON)
    assert set(name_signature(JON, key="k1")) <= set(lexical_signature(JON, key="k1"))
    with HarmLedger(ledger_url, query_key="k1", clock=StepClock()) as ledger:
        record_jon_fault(ledger)
        with ledger.engine.connect() as conn:
            s = tables.memory_scopes
            rows = conn.execute(select(s.c.names, s.c.signature)).all()
    assert rows and all(r.names == name_signature(JON, key="k1") for r in rows)
    assert all("jon" not in str(r.names).lower() + str(r.signature).lower() for r in rows)


def test_a_harm_verified_on_jon_is_not_applied_to_gina(ledger) -> None:
    record_jon_fault(ledger)
    context = dance_context()
    assert ledger.scoped_harm(GINA, context) == []
    assert ledger.prior_candidate(context, query=GINA).ids == ()
    same = ledger.scoped_harm(JON, context)
    assert [(h.memory_id, h.scope) for h in same] == [("jon-stale", "same_query")]
    for reworded in (
        "Remind me, what is jon's favorite style of dance?",
        "What is Jon's favorite style of dance? Do you remember?",
    ):
        harm = ledger.scoped_harm(reworded, context)
        assert [(h.memory_id, h.scope) for h in harm] == [("jon-stale", "similar_query")]


def test_a_lookup_reads_a_bounded_number_of_rows_per_memory(ledger, monkeypatch) -> None:
    """A memory harmful on many questions: the lookup reads its latest few and its own row."""
    from meclear_integrations.ledger import scope_state

    monkeypatch.setattr(scope_state, "ROWS_PER_MEMORY", 3)
    context = dance_context()
    report = clear(context, gold={"jon-true"}, faults={"jon-stale"})
    questions = [f"What did Jon say about the dance number {i}?" for i in range(8)]
    for q in questions:
        ledger.record(report, query=q, context=context, success_signal="reference")
    hashes = {m.id: content_hash(m.content) for m in context}
    with ledger.engine.connect() as conn:
        rows = scope_state.load_active(conn, ledger.namespace, hashes)
        oldest = scope_state.load_active(
            conn, ledger.namespace, hashes, ledger.query_id(questions[0])
        )
    stale = [r for r in rows if r.memory_id == "jon-stale"]
    assert len(stale) == 3  # of 8 questions, the 3 most recent clearances
    assert {r.query_id for r in stale} == {ledger.query_id(q) for q in questions[-3:]}
    own = [r for r in oldest if r.memory_id == "jon-stale"]
    assert len(own) == 4 and ledger.query_id(questions[0]) in {r.query_id for r in own}
    # the oldest question still finds its own verified harm; a rewording of it, compared
    # with the 3 most recent questions only, does not (it pays its own clearance)
    assert [h.scope for h in ledger.scoped_harm(questions[0], context)] == ["same_query"]
    reworded = "Remind me, " + questions[0].lower()
    assert ledger.scoped_harm(reworded, context) == []
    latest = ledger.scoped_harm("Remind me, " + questions[-1].lower(), context)
    assert [(h.memory_id, h.scope) for h in latest] == [("jon-stale", "similar_query")]
