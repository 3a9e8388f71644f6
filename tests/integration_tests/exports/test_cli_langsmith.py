"""``meclear ledger langsmith``: recorded clearances' scores and review proposals sent as
LangSmith feedback, through a LangSmith-compatible recorder on 127.0.0.1."""

from __future__ import annotations

import json

import pytest
from langsmith import utils as ls_utils

from meclear_integrations.cli import main
from tests.support.servers import LangSmithRecorder, serve

pytest.importorskip("sqlalchemy")

TRACES = {n: f"{n}a1c0f9e-0000-4000-8000-000000000200" for n in "12"}


def test_scores_and_proposals_reach_langsmith(tmp_path, monkeypatch, capsys) -> None:
    from meclear_integrations.ledger import HarmLedger
    from tests.support.ledger import clear, memories

    path = tmp_path / "l.db"
    with HarmLedger(path) as ledger:
        for n in "12":
            context = memories("g", "stale", "bg")
            report = clear(context, {"g"}, {"stale"})
            ledger.record(report, query=n, context=context, trace_run_id=TRACES[n])
        untraced = ledger.record(report, query="3", context=context)
    recorder = LangSmithRecorder()
    with serve(recorder) as url:
        monkeypatch.setenv("LANGSMITH_ENDPOINT", url)
        monkeypatch.setenv("LANGSMITH_API_KEY", "dummy")
        ls_utils.get_env_var.cache_clear()
        base = ["ledger", "--ledger", str(path), "langsmith"]
        code = main([*base, TRACES["1"][:8], untraced.run_id[:8], "--proposals"])
        ls_utils.get_env_var.cache_clear()
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "no LangSmith run recorded (skipped)" in out
    feedback = [json.loads(b) for _, p, b in recorder.requests if p == "/feedback"]
    harm = [f for f in feedback if f["key"] == "meclear.memory_harm"]
    assert {f["run_id"] for f in harm} == {TRACES["1"]} and len(harm) == 3
    assert {f["extra"]["memory_id"]: f["value"] for f in harm}["stale"] == "cleared"
    proposals = [f for f in feedback if f["key"] == "meclear.review_proposal"]
    assert {f["run_id"] for f in proposals} == set(TRACES.values())
    assert f"{len(feedback)} feedback written" in out


def test_nothing_named_is_an_error(tmp_path, capsys) -> None:
    from meclear_integrations.ledger import HarmLedger

    HarmLedger(tmp_path / "e.db").close()
    code = main(["ledger", "--ledger", str(tmp_path / "e.db"), "langsmith"])
    assert code == 2 and "--latest N or --proposals" in capsys.readouterr().err
