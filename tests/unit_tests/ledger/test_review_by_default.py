"""Review and replay usable with the default ledger: texts kept (redacted) unless
``store_text=False``; a ``get_documents`` hook reads them from your store instead; the first
verified clearance shows in review as its own tier; a feedback replays from its run alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import NodeWithScore, TextNode

from meclear_integrations.cli import main
from meclear_integrations.cli.ledger_review import review_entries
from meclear_integrations.ledger import HarmLedger, replay_feedback, replay_pending
from tests.support.ledger import clear, memories
from tests.unit_tests.ledger.test_replay import CONTEXT, QUERY, evaluator_for, live_run

QUESTIONS = ("Where does Ana live?", "Which city is Ana's home?")


def record(ledger: HarmLedger, questions: tuple[str, ...] = QUESTIONS) -> list[str]:
    runs = []
    for q in questions:
        context = memories("g", "stale", "bg")
        runs.append(
            ledger.record(clear(context, {"g"}, {"stale"}), query=q, context=context).run_id
        )
    return runs


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_the_default_ledger_keeps_redacted_texts_for_review(tmp_path: Path) -> None:
    with HarmLedger(tmp_path / "l.db") as ledger:
        assert ledger.store_text is True
        runs = record(ledger)
        [entry] = review_entries(ledger, ledger.review())
    assert entry.memory_text == "text of stale" and entry.text_source == "ledger"
    assert sorted(q for q in entry.questions.values() if q) == sorted(QUESTIONS)
    assert sorted(entry.proposal["run_ids"]) == sorted(runs)  # the evidence runs


def test_the_first_verified_clearance_is_its_own_tier(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "l.db"
    with HarmLedger(path) as ledger:
        [first] = record(ledger, QUESTIONS[:1])
        assert ledger.review() == []  # not proposed on one question...
        [single] = ledger.single_query_review()  # ...but shown
        assert (single.memory_id, single.tier, single.run_ids) == ("stale", "single_query", [first])
        assert ledger.single_query_review(min_queries=1) == []
        record(ledger, QUESTIONS[1:])
        assert [p.memory_id for p in ledger.review()] == ["stale"]
        assert ledger.single_query_review() == []  # promoted: never in both tiers
    with HarmLedger(path) as ledger:
        record(ledger, ("q3",))  # a third question: review at --min-queries 4 shows it below
    code, out = run(capsys, "ledger", "--ledger", str(path), "review", "--min-queries", "4")
    assert code == 0 and "no memory was verified harmful for at least 4" in out
    single_part = out.split("single-query clearances")[1]
    assert "memory stale" in single_part and "text: text of stale  [ledger]" in single_part
    assert "Where does Ana live?" in single_part and first[:8] in single_part


def _store(**texts: str) -> dict[str, str]:
    return {"g": "text of g", "stale": "text of stale", "bg": "text of bg", **texts}


@pytest.mark.parametrize("shape", ["mapping", "langchain", "llama_index"])
def test_with_the_privacy_switch_texts_come_from_your_store(tmp_path: Path, shape: str) -> None:
    with HarmLedger(tmp_path / "l.db", store_text=False) as ledger:
        record(ledger)
        proposals = ledger.review()
        [plain] = review_entries(ledger, proposals)
        assert plain.memory_text is None and "store_text=False" in str(plain.text_note)
        assert set(plain.questions.values()) == {None}  # questions are hashes only

        def get_documents(ids: list[str]) -> Any:
            store = _store()
            if shape == "mapping":
                return {i: store[i] for i in ids}
            if shape == "langchain":
                return [Document(page_content=store[i], id=i) for i in ids]
            return [NodeWithScore(node=TextNode(id_=i, text=store[i])) for i in ids]

        [entry] = review_entries(ledger, proposals, get_documents=get_documents)
    assert (entry.memory_text, entry.text_source, entry.text_note) == (
        "text of stale",
        "store",
        None,
    )


def test_a_store_text_that_changed_since_the_evidence_is_not_shown_as_it(tmp_path: Path) -> None:
    with HarmLedger(tmp_path / "l.db") as ledger:
        record(ledger)
        proposals = ledger.review()
        [changed] = review_entries(
            ledger, proposals, get_documents=lambda ids: _store(stale="edited since")
        )
        [gone] = review_entries(ledger, proposals, get_documents=lambda ids: {})
    assert changed.memory_text == "text of stale" and changed.text_source == "ledger"
    assert "content hash differs" in str(changed.text_note)
    assert gone.text_source == "ledger" and "not in your store" in str(gone.text_note)


def test_cli_reads_your_store_from_a_file_or_a_function(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "l.db"
    with HarmLedger(path, store_text=False) as ledger:
        record(ledger)
    base = ("ledger", "--ledger", str(path), "review")
    code, out = run(capsys, *base)
    assert code == 0 and "--get-documents" in out and "text of stale" not in out
    texts = tmp_path / "texts.json"
    texts.write_text(json.dumps(_store()), encoding="utf-8")
    code, out = run(capsys, *base, "--texts", str(texts))
    assert "text: text of stale  [store]" in out
    app = tmp_path / "app"
    app.mkdir()
    (app / "mystore.py").write_text(
        "def get_by_ids(ids):\n    return {i: 'text of ' + i for i in ids}\n", encoding="utf-8"
    )
    monkeypatch.chdir(app)  # imported from the current folder, as python -m would
    code, out = run(capsys, *base, "--get-documents", "mystore:get_by_ids", "--format", "json")
    [proposal] = json.loads(out)["proposals"]
    assert (proposal["memory_text"], proposal["text_source"]) == ("text of stale", "store")


def test_a_feedback_replays_from_its_run_alone(tmp_path: Path) -> None:
    with HarmLedger(tmp_path / "l.db") as ledger:  # the default: texts kept
        original = live_run(ledger, judge_accepts={"Rome"})
        fb = ledger.feedback(original.run_id, correct=False, correction="Paris")
        result = replay_feedback(ledger, fb.feedback_id, evaluator_for=evaluator_for)
        assert result.report.cleared_ids == ["stale"] and result.run.extra["texts_from"] == "ledger"
        assert ledger.prior_harmful(CONTEXT) == ["stale"]
        ledger.feedback(original.run_id, correct=False, correction="Paris")
        [again] = replay_pending(ledger, evaluator_for=evaluator_for)
        assert not isinstance(again, Exception) and again.original.query_text == QUERY
