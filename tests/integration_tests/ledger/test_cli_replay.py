"""``meclear ledger replay``: pending negative feedback replayed from the command line with a
model named as in ``meclear bench`` (the text-reading stand-in served on 127.0.0.1)."""

from __future__ import annotations

from meclear_integrations.cli import main
from meclear_integrations.core import Memory
from meclear_integrations.ledger import HarmLedger
from tests.support.ledger import clear, memories


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


CAT = "What is the name of Ana's cat?"


def _cat_ledger(path) -> tuple[str, list[Memory]]:
    context = [
        Memory(id="g", content="Ana adopted a cat named Miso from the shelter."),
        Memory(id="stale", content="Ana adopted a cat named Tom from the shelter last week."),
        Memory(id="bg", content="Ana plays the cello."),
    ]
    with HarmLedger(path, store_text=True) as ledger:
        report = clear(context, {"g", "stale"}, set())  # the live judge was fooled
        run = ledger.record(report, query=CAT, context=context)
        feedback = ledger.feedback(run.run_id, correct=False, correction="Miso")
    return feedback.feedback_id, context


def test_pending_feedback_is_replayed_from_the_cli(tmp_path, capsys) -> None:
    from meclear_bench.reader_server import serve_reader

    target = tmp_path / "cat.db"
    feedback_id, _ = _cat_ledger(target)
    base = ("ledger", "--ledger", str(target))
    with serve_reader() as (url, state):
        flags = ("--agent-model", "text-reader", "--base-url", url)
        code, out, err = run(capsys, *base, "replay", feedback_id[:8], *flags)
        assert code == 0, err
        assert state.calls > 0
    assert out.startswith(feedback_id[:8]) and "cleared stale" in out
    with HarmLedger(target) as ledger:
        replays = ledger.runs(origin="replay")
        assert len(replays) == 1 and replays[0].cleared_ids == ["stale"]
        assert replays[0].agent_model == "text-reader"
        assert not ledger.pending_replays()
    code, out, _ = run(capsys, *base, "replay", *flags)
    assert code == 0 and "no feedback waiting" in out


def test_replay_without_texts_or_query_says_what_is_missing(tmp_path, capsys) -> None:
    target = tmp_path / "plain.db"
    context = memories("g", "stale")
    with HarmLedger(target, store_text=False) as ledger:  # the privacy switch
        run_record = ledger.record(clear(context, {"g"}, set()), query="q", context=context)
        ledger.feedback(run_record.run_id, correct=False, correction="x")
    flags = ("--agent-model", "text-reader", "--base-url", "http://127.0.0.1:1/v1")
    code, out, _ = run(capsys, "ledger", "--ledger", str(target), "replay", *flags)
    assert code == 2 and "not replayed" in out and "query=" in out
