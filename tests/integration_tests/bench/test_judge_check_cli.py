"""``meclear judge-check`` against the text-reading stand-in served on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

from meclear_bench.reader_server import serve_reader
from meclear_integrations.cli import main
from tests.unit_tests.bench.real_fixtures import write_conversations


def test_cli_with_the_stand_in_and_a_judge_that_cannot_answer(tmp_path: Path, capsys) -> None:
    data = write_conversations(tmp_path / "locomo", ids=("42", "43"))
    flags = ["judge-check", "--locomo", str(data), "--questions", "4", "--no-cache"]
    with serve_reader() as (url, _):
        assert main([*flags, "--judge-model", "text-reader", "--base-url", url]) == 0
    out = capsys.readouterr().out
    assert "| 16 | 16 | 100.0%" in out  # the stand-in agrees with exact match
    with serve_reader(rewrite=lambda prompt, text: "CORRECT") as (url, _):
        flags += ["--judge-model", "text-reader", "--base-url", url, "--judge-output", "text"]
        code = main([*flags, "--out", str(tmp_path / "out")])
    report = json.loads((tmp_path / "out" / "judge_check.json").read_text(encoding="utf-8"))
    assert report["n"] == 16
    # a bare CORRECT is not this call's verdict: counted as no verdict, never as a verdict,
    # unless the judges read it (then it is a verdict and the yes-man shows false accepts)
    assert report["no_verdict"] + report["verdicts"] == 16
    if report["verdicts"]:
        assert report["false_accept"]["k"] == report["false_accept"]["n"]
    else:
        assert code == 2
