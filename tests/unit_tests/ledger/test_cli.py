"""``meclear ledger``: review, show, restore, feedback, pending, stats, migrate."""

from __future__ import annotations

import csv
import json

import pytest

from meclear_integrations.cli import main
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.ledger.migrations import SCHEMA_VERSION
from tests.support.ledger import clear, memories


@pytest.fixture
def path(tmp_path):
    target = tmp_path / "ledger.db"
    with HarmLedger(target) as ledger:
        for q in ("q1", "q2", "q3"):
            context = memories("g", "stale", "bg")
            ledger.record(
                clear(context, {"g"}, {"stale"}), query=q, context=context, trace_run_id=f"t-{q}"
            )
        context = memories("g", "once", "bg")
        ledger.record(clear(context, {"g"}, {"once"}), query="q4", context=context)
    return target


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_review_table_json_and_csv(path, tmp_path, capsys) -> None:
    code, out, _ = run(capsys, "ledger", "--ledger", str(path), "review")
    proposed, single = out.split("single-query clearances")
    assert code == 0 and "stale" in proposed and "once" not in proposed
    assert "nothing was deleted" in proposed
    assert "memory once" in single and "text: text of once  [ledger]" in single  # its own tier
    code, out, _ = run(capsys, "ledger", "--ledger", str(path), "review", "--single-query", "hide")
    assert "once" not in out and "single-query" not in out
    code, out, _ = run(capsys, "ledger", "--ledger", str(path), "review", "--format", "json")
    document = json.loads(out)
    assert [p["memory_id"] for p in document["proposals"]] == ["stale"]
    assert document["proposals"][0]["harmful_queries"] == 3
    assert document["proposals"][0]["tier"] == "proposed"
    [once] = document["single_query"]
    assert (once["memory_id"], once["tier"], once["harmful_queries"]) == ("once", "single_query", 1)
    assert once["memory_text"] == "text of once" and once["questions"] == {
        HarmLedger(path).query_id("q4"): "q4"
    }
    target = tmp_path / "out" / "proposals.csv"
    code, out, _ = run(
        capsys, "ledger", "--ledger", str(path), "review", "--min-queries", "1",
        "--format", "csv", "--out", str(target),
    )  # fmt: skip
    rows = list(csv.DictReader(target.open()))
    assert [r["memory_id"] for r in rows] == ["stale", "once"]


def test_show_feedback_restore_pending_and_stats(path, capsys) -> None:
    base = ("ledger", "--ledger", str(path))
    code, out, _ = run(capsys, *base, "show", "stale")
    assert code == 0 and out.count("CLEARED") == 3 and "restored now: no" in out
    code, out, _ = run(
        capsys, *base, "feedback", "t-q1", "--incorrect", "--correction", "Paris",
        "--memory-id", "stale",
    )  # fmt: skip
    feedback = json.loads(out)
    assert code == 0 and feedback["correct"] is False and feedback["memory_ids"] == ["stale"]
    code, out, _ = run(capsys, *base, "pending")
    assert feedback["feedback_id"] in out and "1 feedback waiting" in out
    code, out, _ = run(capsys, *base, "restore", "stale", "--reason", "checked", "--actor", "ana")
    assert code == 0 and "restored 'stale'" in out
    code, out, _ = run(capsys, *base, "show", "stale")
    assert "RESTORED by ana: checked" in out and "restored now: yes" in out
    assert "feedback INCORRECT names it" in out
    code, out, _ = run(capsys, *base, "review")
    assert "no memory was verified harmful" in out
    code, out, _ = run(capsys, *base, "stats")
    assert json.loads(out)["runs_by_mode"] == {"full": 4}


def test_errors_are_messages(path, tmp_path, capsys) -> None:
    code, _, err = run(capsys, "ledger", "--ledger", str(tmp_path / "none.db"), "review")
    assert code == 2 and "no ledger at" in err
    assert not (tmp_path / "none.db").exists()
    code, _, err = run(capsys, "ledger", "--ledger", str(path), "feedback", "x", "--correct")
    assert code == 2 and "no run" in err
    code, _, err = run(capsys, "ledger", "--ledger", str(path), "show", "unknown")
    assert code == 1


def test_migrate_creates_a_ledger(tmp_path, capsys, monkeypatch) -> None:
    target = tmp_path / "new.db"
    monkeypatch.setenv("MECLEAR_LEDGER_URL", str(target))
    code, out, _ = run(capsys, "ledger", "migrate")
    assert code == 0 and f"schema version {SCHEMA_VERSION}" in out and target.exists()
