"""``--config FILE``: a command's settings from a TOML file, for long runs.

Keys are the command's flag names without the dashes (``agent-model`` or ``agent_model``),
values their TOML types (strings, numbers, booleans for on/off flags, arrays for repeatable
flags). Keys may sit at the top level or in a table named after the command (``[bench]``,
``[admission-bench]``, ``[ledger]`` for every ``ledger`` subcommand, ``[ledger.replay]`` for
one), so one file can serve several commands; the more specific table wins. A flag given
on the command line wins over the file. An unknown key, a value outside a flag's choices or
a wrong type is an error that names the key::

    # long-run.toml
    [bench]
    locomo = "/data/locomo10"
    agent-model = "gpt-4o-mini"
    max-calls = 50000
    concurrency = 8
    out = "runs/gpt"

    meclear bench --config long-run.toml --resume
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["CONFIG_FLAG", "add_config_flag", "apply_config"]

CONFIG_FLAG = "--config"


def add_config_flag(parser: argparse.ArgumentParser) -> None:
    """Give ``parser`` the ``--config FILE`` flag (read by :func:`apply_config`).

    Args:
        parser: A command's parser.
    """
    if CONFIG_FLAG in parser._option_string_actions:
        return
    parser.add_argument(
        CONFIG_FLAG,
        type=Path,
        default=None,
        metavar="FILE",
        help="TOML file of this command's settings (keys: flag names; the command line wins)",
    )


def _value(argv: Sequence[str]) -> str | None:
    for i, token in enumerate(argv):
        if token == CONFIG_FLAG and i + 1 < len(argv):
            return argv[i + 1]
        if token.startswith(CONFIG_FLAG + "="):
            return token.split("=", 1)[1]
    return None


def _chain(parser: argparse.ArgumentParser, argv: Sequence[str]) -> tuple[str, list[Any]]:
    """The command named by ``argv``'s command words, and its parsers, the command's first.

    The parsers above it come after it: a command's own options (``meclear ledger
    --ledger``) may be set from the file too.
    """
    path: list[str] = []
    chain: list[Any] = [parser]
    for token in argv:
        if token.startswith("-"):
            continue
        subs = [a for a in chain[-1]._actions if isinstance(a, argparse._SubParsersAction)]
        if subs and token in subs[0].choices:
            chain.append(subs[0].choices[token])
            path.append(token)
    return " ".join(path), chain[::-1]


def _settings(document: dict[str, Any], command: str) -> dict[str, Any]:
    """The file's settings for ``command``: top level, then the tables of the command's words.

    ``meclear ledger stats`` reads ``[ledger]`` then ``["ledger stats"]`` (or
    ``[ledger.stats]``, or ``[stats]``), the more specific table winning.
    """
    words = command.split(" ") if command else []
    settings = {k: v for k, v in document.items() if not isinstance(v, dict)}
    names: list[str] = [" ".join(words[:n]) for n in range(1, len(words) + 1)]
    if words:
        names += [words[-1]]
    for name in dict.fromkeys(names):
        table = document.get(name)
        if table is None and "." not in name:  # [ledger.stats] is a table inside [ledger]
            table = document
            for word in name.split(" "):
                table = table.get(word) if isinstance(table, dict) else None
        if isinstance(table, dict):
            settings.update({k: v for k, v in table.items() if not isinstance(v, dict)})
    return settings


def _check(action: argparse.Action, key: str, value: Any) -> None:
    if isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction):
        if not isinstance(value, bool):
            raise ValueError(f"{key}: expected true or false, got {value!r}")
    elif isinstance(action, argparse._AppendAction):
        if not isinstance(value, list):
            raise ValueError(f"{key}: expected an array, got {value!r}")
    elif isinstance(value, dict | list):
        raise ValueError(f"{key}: expected one value, got {value!r}")
    if action.choices is not None and value not in action.choices:
        choices = ", ".join(map(str, action.choices))
        raise ValueError(f"{key}: {value!r} is not one of {choices}")


def _converted(action: argparse.Action, value: Any) -> Any:
    """A TOML value as the flag's type would give it (strings pass through argparse)."""
    if isinstance(value, bool) or action.type is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return [action.type(v) if callable(action.type) else v for v in value]
    return action.type(value) if callable(action.type) else value


def apply_config(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
    """Load the ``--config`` file named in ``argv`` into its command's defaults.

    Args:
        parser: The ``meclear`` parser.
        argv: The command line.

    Raises:
        SystemExit: The file cannot be read or holds a setting the command does not have
            (status 2, the reason on stderr).
    """
    path = _value(argv)
    if path is None:
        return
    command, chain = _chain(parser, argv)
    leaf = chain[0]
    try:
        document = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        leaf.error(f"--config {path}: {exc}")
    defaults: dict[int, dict[str, Any]] = {}
    try:
        for key, value in _settings(document, command).items():
            flag = "--" + key.replace("_", "-")
            owner = next((p for p in chain if flag in p._option_string_actions), None)
            action = owner._option_string_actions[flag] if owner is not None else None
            if action is None or action.help == argparse.SUPPRESS or flag == CONFIG_FLAG:
                known = sorted(
                    s[2:]
                    for p in chain[:-1] or chain
                    for s, a in p._option_string_actions.items()
                    if s.startswith("--")
                    and a.help != argparse.SUPPRESS
                    and s not in ("--help", CONFIG_FLAG)
                )
                raise ValueError(
                    f"{key}: not a setting of 'meclear {command}' ({', '.join(known)})"
                )
            _check(action, key, value)
            defaults.setdefault(chain.index(owner), {})[action.dest] = _converted(action, value)
            action.required = False
    except ValueError as exc:
        print(f"meclear {command}: error: --config {path}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    for index, values in defaults.items():
        chain[index].set_defaults(**values)
