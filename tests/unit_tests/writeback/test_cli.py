"""``meclear ledger accept / apply --dry-run / apply / tombstones / restore --store`` on a
store named ``module:attribute``; applying twice and bad input are one clear line."""

from __future__ import annotations

import json
import textwrap

import pytest

from meclear_integrations.cli import main
from meclear_integrations.ledger import HarmLedger
from tests.support.ledger import clear, memories

QUESTIONS = ("Where does Ana live?", "Which city is Ana's home?", "Ana lives where?")


@pytest.fixture
def setup(tmp_path, monkeypatch):
    target = tmp_path / "ledger.db"
    with HarmLedger(target) as ledger:
        for q in QUESTIONS:
            context = memories("g", "stale", "bg")
            ledger.record(clear(context, {"g"}, {"stale"}), query=q, context=context)
    module = tmp_path / "my_store.py"
    module.write_text(
        textwrap.dedent(
            """
            from langchain_core.documents import Document
            from langchain_core.embeddings import DeterministicFakeEmbedding
            from langchain_core.vectorstores import InMemoryVectorStore

            NOT_A_STORE = {"a": 1}
            STORE = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
            STORE.add_documents(
                [Document(id=i, page_content=f"text of {i}") for i in ("g", "stale", "bg")]
            )
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    import sys

    sys.modules.pop("my_store", None)
    store = importlib.import_module("my_store").STORE
    return target, store


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_accept_dry_run_apply_twice_and_restore(setup, capsys) -> None:
    target, store = setup
    base = ("ledger", "--ledger", str(target))
    code, out, _ = run_cli(capsys, *base, "accept", "stale", "--actor", "ana", "--reason", "moved")
    assert code == 0 and "accepted stale" in out and "3 evidence runs" in out

    code, out, _ = run_cli(capsys, *base, "apply", "--store", "my_store:STORE", "--dry-run")
    assert code == 0 and "stale: would be retired" in out and "nothing changed" in out
    assert store.get_by_ids(["stale"])

    code, out, _ = run_cli(capsys, *base, "apply", "--store", "my_store:STORE", "--actor", "ops")
    assert code == 0 and "stale: retired" in out and "1 retired" in out
    assert store.get_by_ids(["stale"]) == []

    code, out, _ = run_cli(capsys, *base, "apply", "--store", "my_store:STORE", "stale")
    assert code == 0 and "already retired" in out and "nothing changed" in out

    code, out, _ = run_cli(capsys, *base, "tombstones")
    assert code == 0 and "ACCEPTED  stale by ana via cli: moved" in out
    assert "RETIRED   stale tombstone" in out and "by ops" in out
    code, out, _ = run_cli(capsys, *base, "tombstones", "--format", "json")
    trail = json.loads(out)
    assert trail["tombstones"][0]["run_ids"] == trail["decisions"][0]["run_ids"]
    assert "payload" not in trail["tombstones"][0]  # the memory's text stays in the ledger

    restore = ("restore", "stale", "--store", "my_store:STORE", "--actor", "ana")
    code, out, _ = run_cli(capsys, *base, *restore, "--dry-run")
    assert code == 0 and "would be restored" in out and store.get_by_ids(["stale"]) == []
    code, out, _ = run_cli(capsys, *base, *restore)
    assert code == 0 and "restored from tombstone" in out
    assert [d.page_content for d in store.get_by_ids(["stale"])] == ["text of stale"]
    code, out, _ = run_cli(capsys, *base, *restore)
    assert code == 2 and "no open tombstone" in out


def test_bad_input_is_one_line_and_exit_2(setup, capsys) -> None:
    target, _ = setup
    base = ("ledger", "--ledger", str(target))
    code, _, err = run_cli(capsys, *base, "accept", "g", "--actor", "ana")
    assert code == 2 and "not among the review proposals" in err and len(err.splitlines()) == 1
    for spec, message in (
        ("nowhere:STORE", "no module 'nowhere'"),
        ("my_store:MISSING", "has no 'MISSING'"),
        ("my_store", "expected module:attribute"),
        ("my_store:NOT_A_STORE", "no write-back adapter"),
    ):
        code, _, err = run_cli(capsys, *base, "apply", "--store", spec)
        assert code == 2 and message in err and len(err.splitlines()) == 1, (spec, err)
    code, out, _ = run_cli(capsys, *base, "apply", "--store", "my_store:STORE")
    assert code == 0 and "no accepted review is pending" in out


def test_decisions_from_phoenix_and_bad_spans(setup, capsys, monkeypatch) -> None:
    from types import SimpleNamespace

    target, store = setup
    base = ("ledger", "--ledger", str(target))
    assert store.get_by_ids(["stale"])
    with HarmLedger(target) as ledger:
        run = ledger.runs(limit=1)[0].run_id
    found = [
        {"id": "a1", "span_id": "abcdef0123456789", "result": {"label": "accept"}},
        {"id": "a2", "span_id": "abcdef0123456789", "result": {"label": "hmm"}},
    ]
    client = SimpleNamespace(spans=SimpleNamespace(get_span_annotations=lambda **kw: found))
    import phoenix.client

    monkeypatch.setattr(phoenix.client, "Client", lambda: client)
    span = f"abcdef0123456789={run}"
    code, out, _ = run_cli(
        capsys, *base, "decisions-from", "phoenix", "--project", "p", "--span", span
    )
    assert code == 0 and "accepted stale by phoenix (phoenix a1)" in out
    assert "skipped a2: says neither accept nor reject" in out
    code, out, _ = run_cli(capsys, *base, "apply", "--store", "my_store:STORE")
    assert code == 0 and "stale: retired" in out and store.get_by_ids(["stale"]) == []
    code, _, err = run_cli(
        capsys, *base, "decisions-from", "phoenix", "--project", "p", "--span", "x"
    )
    assert code == 2 and "expected SPAN_ID=RUN_ID" in err
