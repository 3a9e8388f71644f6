"""The ``meclear`` command line as a whole: plain-text help, one spelling per flag (old ones
hidden and warning), grouped ``bench`` help, settings from a TOML file."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from meclear_integrations.cli import build_parser, main
from meclear_integrations.cli.polish import RENAMES, leaves

RST = re.compile(r"``|:(func|class|mod|meth|data|attr):`|\*\*")


def _commands() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    return [(path, p) for path, p in leaves(build_parser()) if path]


@pytest.mark.parametrize("path", [p for p, _ in _commands()], ids=" ".join)
def test_help_is_plain_text(path: tuple[str, ...]) -> None:
    parser = dict(_commands())[path]
    text = parser.format_help()
    assert not RST.search(text), RST.search(text)


def test_shared_settings_have_one_spelling_across_commands() -> None:
    """A flag of one meaning is spelled the same by every command that has it."""
    seen: dict[str, set[str]] = {}
    for path, parser in _commands():
        for action in parser._actions:
            if action.help == argparse.SUPPRESS:
                continue
            for flag in action.option_strings:
                seen.setdefault(flag, set()).add(" ".join(path))
    for command, renames in RENAMES.items():
        for old, new in renames.items():
            assert old not in seen or command not in seen[old]  # hidden
            assert command in seen[new]
    for shared in ("--agent-model", "--base-url", "--concurrency", "--out", "--no-progress"):
        assert {"bench", "admission-bench"} <= seen[shared]


def test_an_old_spelling_still_works_and_warns(capsys) -> None:
    parser = build_parser()
    args = parser.parse_args(["admission-bench", "--out", "x", "--concurrent-cases", "3"])
    assert args.concurrent_cases == 3
    assert "--concurrent-cases is deprecated; use --concurrency" in capsys.readouterr().err
    args = parser.parse_args(["admission-bench", "--out", "x", "--concurrency", "5"])
    assert args.concurrent_cases == 5
    assert capsys.readouterr().err == ""
    assert (
        "--openai-model"
        not in parser._subparsers._group_actions[0]
        .choices[  # type: ignore[union-attr]
            "admission-bench"
        ]
        .format_help()
    )


def test_bench_help_is_grouped() -> None:
    text = dict(_commands())[("bench",)].format_help()
    for title in ("cases:", "methods and their settings:", "output:", "real models", "long runs:"):
        assert title in text
    assert text.index("cases:") < text.index("real models")


def test_settings_from_a_toml_file(tmp_path: Path, capsys) -> None:
    config = tmp_path / "run.toml"
    config.write_text(
        'seed = 9\n[bench]\nmethods = "none"\nbootstrap = 0\n'
        f'no-figures = true\nno_progress = true\nout = "{tmp_path / "from-file"}"\n',
        encoding="utf-8",
    )
    assert main(["bench", "--config", str(config), "--seed", "4"]) == 0
    results = json.loads((tmp_path / "from-file" / "results.json").read_text())
    assert results["settings"]["methods"] == ["none"]
    assert results["settings"]["seed"] == 4  # the command line wins over the file
    assert results["settings"]["bootstrap_replicates"] == 0
    capsys.readouterr()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("bogus = 1\n", "bogus: not a setting of 'meclear bench'"),
        ('clearance = "sometimes"\n', "clearance: 'sometimes' is not one of"),
        ('no-figures = "yes"\n', "no-figures: expected true or false"),
        ("seed = [1, 2]\n", "seed: expected one value"),
        ("seed = \n", "--config"),
    ],
)
def test_a_bad_settings_file_names_the_key(tmp_path: Path, capsys, body: str, message: str) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(body, encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["bench", "--config", str(config), "--out", str(tmp_path / "o")])
    assert info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_required_flag_may_come_from_the_file(tmp_path: Path) -> None:
    config = tmp_path / "a.toml"
    config.write_text(f'["admission-bench"]\nout = "{tmp_path / "ab"}"\n', encoding="utf-8")
    parser = build_parser()
    from meclear_integrations.cli.config_file import apply_config

    argv = ["admission-bench", "--config", str(config)]
    apply_config(parser, argv)
    assert parser.parse_args(argv).out == tmp_path / "ab"


def test_a_parent_commands_option_may_come_from_the_file(tmp_path: Path, capsys) -> None:
    pytest.importorskip("sqlalchemy")
    from meclear_integrations.ledger import HarmLedger

    HarmLedger(tmp_path / "l.db").close()
    config = tmp_path / "ledger.toml"
    config.write_text(f'[ledger]\nledger = "{tmp_path / "l.db"}"\n', encoding="utf-8")
    assert main(["ledger", "stats", "--config", str(config)]) == 0
    assert json.loads(capsys.readouterr().out)["runs_by_mode"] == {}


def test_the_more_specific_table_wins(tmp_path: Path) -> None:
    from meclear_integrations.cli.config_file import apply_config

    config = tmp_path / "c.toml"
    config.write_text(
        'namespace = "top"\n[ledger]\nnamespace = "all"\nledger = "x.db"\n'
        "[ledger.review]\nmin-queries = 5\n[bench]\nseed = 1\n",
        encoding="utf-8",
    )
    parser = build_parser()
    argv = ["ledger", "review", "--config", str(config)]
    apply_config(parser, argv)
    args = parser.parse_args(argv)
    assert (args.namespace, args.ledger, args.min_queries) == ("all", "x.db", 5)
