"""``meclear ledger`` for a person: texts and questions beside each proposal, the short ids
it prints accepted back, pending feedback replayed from the command line."""

from __future__ import annotations

import json

import pytest

from meclear_integrations.cli import main
from meclear_integrations.core import Memory
from meclear_integrations.ledger import HarmLedger
from tests.support.ledger import clear, memories

QUESTIONS = ("Where does Ana live?", "Which city is Ana's home?", "Ana lives where?")


@pytest.fixture
def texts(tmp_path):
    target = tmp_path / "texts.db"
    with HarmLedger(target, store_text=True) as ledger:
        for q in QUESTIONS:
            context = memories("g", "stale", "bg")
            ledger.record(clear(context, {"g"}, {"stale"}), query=q, context=context)
    return target


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_review_shows_text_and_questions(texts, capsys) -> None:
    code, out, _ = run(capsys, "ledger", "--ledger", str(texts), "review")
    assert code == 0
    assert "memory stale" in out and "text: text of stale" in out
    assert all(q in out for q in QUESTIONS)
    code, out, _ = run(capsys, "ledger", "--ledger", str(texts), "review", "--format", "json")
    proposal = json.loads(out)["proposals"][0]
    assert proposal["memory_text"] == "text of stale"
    assert sorted(proposal["questions"].values()) == sorted(QUESTIONS)
    assert set(proposal["questions"]) == set(proposal["query_ids"])


def test_review_texts_are_redacted(tmp_path, capsys) -> None:
    target = tmp_path / "secret.db"
    key = "sk-proj-" + "a1B2" * 12
    with HarmLedger(target, store_text=True) as ledger:
        for q in ("q one", "q two"):
            context = [Memory(id="g", content="good"), Memory(id="s", content=f"key {key}")]
            ledger.record(clear(context, {"g"}, {"s"}), query=q, context=context)
    code, out, _ = run(capsys, "ledger", "--ledger", str(target), "review")
    assert code == 0 and "memory s " in out and key not in out


def test_review_without_texts_says_where_they_are(tmp_path, capsys) -> None:
    target = tmp_path / "plain.db"
    with HarmLedger(target, store_text=False) as ledger:  # the privacy switch
        for q in QUESTIONS[:2]:
            context = memories("g", "stale")
            ledger.record(clear(context, {"g"}, {"stale"}), query=q, context=context)
    code, out, _ = run(capsys, "ledger", "--ledger", str(target), "review")
    assert code == 0 and "not kept" in out and "question text not kept" in out


def test_printed_short_ids_are_accepted(texts, capsys) -> None:
    base = ("ledger", "--ledger", str(texts))
    _, out, _ = run(capsys, *base, "show", "stale")
    short_run = out.split(" run ")[1].split()[0]
    assert len(short_run) == 8
    code, out, err = run(capsys, *base, "feedback", short_run, "--incorrect", "--correction", "x")
    assert code == 0, err
    record = json.loads(out)
    assert record["run_id"].startswith(short_run) and len(record["run_id"]) == 36
    short_query = record["query_id"][:8]
    code, out, err = run(capsys, *base, "feedback", short_query, "--correct")
    assert code == 0, err and json.loads(out)["query_id"] == record["query_id"]
    code, _, err = run(capsys, *base, "feedback", short_run[:3], "--correct")
    assert code == 2 and "no run" in err  # too short to stand for an id


def test_an_ambiguous_prefix_is_refused_with_the_matches(tmp_path, capsys) -> None:
    target = tmp_path / "amb.db"
    with HarmLedger(target) as ledger:
        for n in ("1", "2"):
            context = memories("g", "stale")
            ledger.record(
                clear(context, {"g"}, {"stale"}),
                query=n,
                context=context,
                trace_run_id=f"trace-{n}",
            )
    code, _, err = run(capsys, "ledger", "--ledger", str(target), "feedback", "trace-", "--correct")
    assert code == 2 and "ambiguous" in err and "trace-1" in err and "trace-2" in err


def test_review_csv_carries_text_and_questions_safely(tmp_path, capsys) -> None:
    import csv
    import io

    target = tmp_path / "csv.db"
    with HarmLedger(target, store_text=True) as ledger:
        for q in ("=cmd|' /C calc'!A0", "second question"):
            context = [Memory(id="g", content="good"), Memory(id="s", content="=HYPERLINK(x)")]
            ledger.record(clear(context, {"g"}, {"s"}), query=q, context=context)
    code, out, _ = run(capsys, "ledger", "--ledger", str(target), "review", "--format", "csv")
    assert code == 0
    (row,) = list(csv.DictReader(io.StringIO(out)))
    assert row["memory_id"] == "s" and row["harmful_queries"] == "2"
    assert row["memory_text"] == "'=HYPERLINK(x)"  # no formula reaches a spreadsheet
    assert row["questions"][:1] not in "=+-@" and "second question" in row["questions"]
