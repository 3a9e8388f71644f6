"""Terminal escapes: a memory id (or query, reason, actor) carrying escape sequences is
never printed raw by the CLI: tables, JSON, CSV and ``--out`` files show them as
``\\uXXXX`` escapes, and JSON and CSV still round-trip the stored value."""

from __future__ import annotations

import csv
import io
import json

import pytest

from meclear_integrations.cli import main
from meclear_integrations.ledger import HarmLedger
from tests.support.ledger import clear, memories

CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"  # OSC 52: write the clipboard
ERASE = "\r\x1b[2K"  # go to column 0 and erase the line
HIDDEN = "\x1b[8mhidden\x1b[0m"
C1_CSI = "\x9b31m"  # the one-character CSI of 8-bit terminals
BIDI = "\u202egnp.exe"
HOSTILE_ID = f"mem{CLIPBOARD}{ERASE}{HIDDEN}{C1_CSI}{BIDI}"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\r")


def _clean(text: str) -> bool:
    return not any(c in text for c in RAW)


@pytest.fixture
def path(tmp_path):
    target = tmp_path / "ledger.db"
    with HarmLedger(target) as ledger:
        for q in ("q1", "q2", "q3"):
            context = memories("g", HOSTILE_ID, "bg")
            ledger.record(
                clear(context, {"g"}, {HOSTILE_ID}),
                query=f"{q}{HIDDEN}",
                context=context,
                trace_run_id=f"t-{q}",
            )
    return target


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_review_table_shows_no_raw_escape(path, capsys) -> None:
    code, out, err = _run(capsys, "ledger", "--ledger", str(path), "review")
    assert code == 0 and "mem" in out
    assert _clean(out) and _clean(err)
    assert "\\u001b]52" in out  # shown, not acted on


def test_review_json_and_csv_show_no_raw_escape_and_round_trip(path, tmp_path, capsys) -> None:
    base = ("ledger", "--ledger", str(path), "review")
    code, out, _ = _run(capsys, *base, "--format", "json")
    assert code == 0 and _clean(out)
    assert json.loads(out)["proposals"][0]["memory_id"] == HOSTILE_ID
    code, out, _ = _run(capsys, *base, "--format", "csv")
    assert code == 0 and _clean(out)
    target = tmp_path / "proposals.csv"
    _run(capsys, *base, "--format", "csv", "--out", str(target))
    written = target.read_text(encoding="utf-8")
    assert _clean(written)
    rows = list(csv.DictReader(io.StringIO(written)))
    assert rows and rows[0]["memory_id"].startswith("mem\\u001b]52")


def test_show_and_pending_show_no_raw_escape(path, capsys) -> None:
    base = ("ledger", "--ledger", str(path))
    for argv in (("show", HOSTILE_ID), ("show", HOSTILE_ID, "--format", "json")):
        code, out, err = _run(capsys, *base, *argv)
        assert code == 0 and _clean(out) and _clean(err)
    code, out, _ = _run(
        capsys, *base, "feedback", "t-q1", "--incorrect", "--memory-id", HOSTILE_ID,
        "--comment", ERASE + "all good",
    )  # fmt: skip
    assert code == 0 and _clean(out)
    code, out, _ = _run(capsys, *base, "pending")
    assert code == 0 and _clean(out)
    code, out, _ = _run(capsys, *base, "restore", HOSTILE_ID, "--reason", HIDDEN)
    assert code == 0 and _clean(out)


@pytest.mark.parametrize("char", [chr(c) for c in (*range(0, 9), *range(11, 32), *range(127, 160))])
def test_every_control_character_is_shown(char: str) -> None:
    from meclear_integrations.core.text import terminal_safe

    out = terminal_safe(f"a{char}b")
    assert char not in out and out.startswith("a\\u") and out.endswith("b")


def test_newline_tab_and_ordinary_text_are_kept() -> None:
    from meclear_integrations.core.text import terminal_safe

    text = "John was in Italy\tin December 2023.\nÉté, 東京, emoji 👍🏽"
    assert terminal_safe(text) == text
