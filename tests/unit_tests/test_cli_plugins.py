"""The harness's commands come through the ``meclear.commands`` entry points (issue 30 item 1)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import meclear_integrations
from meclear_integrations.cli import build_parser, main
from meclear_integrations.cli.plugins import HARNESS_COMMANDS, INSTALL_HINT

BEFORE_THE_MOVE = (Path(meclear_integrations.__file__).parent / "bench").is_dir()


def test_every_harness_command_is_registered() -> None:
    choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert set(HARNESS_COMMANDS) <= set(choices)


@pytest.mark.skipif(BEFORE_THE_MOVE, reason="the harness is still inside the library")
def test_without_the_harness_its_commands_say_how_to_install_it(monkeypatch, capsys) -> None:
    for name in [m for m in sys.modules if m.split(".")[0] == "meclear_bench"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "meclear_bench", None)  # not installed
    assert main(["bench", "--split", "all", "--methods", "none"]) == 2
    assert INSTALL_HINT in capsys.readouterr().err
    assert main(["demo"]) == 0  # the library's own commands still run
