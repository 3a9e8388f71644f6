"""The README's commands and quickstart stay true."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
CI = Path(__file__).resolve().parents[2] / ".ci" / "run"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_the_two_commands_and_ci_runs_the_test_one() -> None:
    bash = blocks("bash")
    assert 'pip install -e ".[dev]" && meclear demo' in bash[0]
    test_command = bash[1].strip()
    assert test_command == "python -m pytest"
    assert test_command in CI.read_text()


def test_engine_quickstart_runs(capsys) -> None:
    code = next(b for b in blocks("python") if "MeClearEngine" in b)
    exec(compile(code, "README quickstart", "exec"), {})
    out = capsys.readouterr().out
    assert "['f1', 'f2']" in out


def test_shared_limits_example_runs(capsys) -> None:
    code = next(b for b in blocks("python") if "CallLimiter(" in b)
    exec(compile(code, "README shared limits", "exec"), {})
    assert capsys.readouterr().out.split() == ["4", "0", "330"]
