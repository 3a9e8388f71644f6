"""One look for every ``meclear`` command: plain-text help, grouped flags, one name per flag.

Applied to the whole parser once every command has registered (:func:`polish`):

- **Plain text.** Descriptions and flag help come from docstrings written for Sphinx:
  ````x```` becomes ``x``, ``:func:`x``` becomes ``x``, ``**x**`` becomes ``x``; a multi-line
  description keeps its lines (lists stay lists).
- **One name per flag.** A flag spelled differently by two commands answers to the shared
  name (:data:`RENAMES`); the old spelling still works, hidden from ``--help``, and warns.
- **Grouped help.** ``meclear bench``'s flags are shown in groups (:data:`BENCH_GROUPS`).
- **Settings files.** Every command takes ``--config FILE`` (:mod:`.config_file`).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["BENCH_GROUPS", "RENAMES", "leaves", "plain", "polish"]

RENAMES: dict[str, dict[str, str]] = {
    "admission-bench": {
        "--openai-model": "--agent-model",
        "--openai-base-url": "--base-url",
        "--temperature": "--agent-temperature",
        "--concurrent-cases": "--concurrency",
        "--max-concurrency": "--calls-per-case",
    },
}
"""Command -> old flag -> the name the other commands use (the old one warns)."""

BENCH_GROUPS: dict[str, tuple[str, ...]] = {
    "cases": (
        "--cases",
        "--locomo",
        "--split",
        "--k",
        "--conversations",
        "--max-queries",
    ),
    "methods and their settings": (
        "--methods",
        "--preset",
        "--estimator",
        "--permutations",
        "--trials",
        "--clearance",
        "--budget",
        "--reference",
        "--recovery-trials",
        "--rater-model",
        "--rater-base-url",
    ),
    "the simulated world (without --agent-model)": ("--setting", "--judge", "--temperature"),
    "output": ("--out", "--seed", "--bootstrap", "--no-figures", "--no-progress"),
}
"""``meclear bench``'s flags by group (the real-model and long-run groups are its own)."""

_LITERAL = re.compile(r"``([^`]+)``")
_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")


def plain(text: str | None) -> str | None:
    """``text`` without reStructuredText markup.

    Args:
        text: Help or description text (None passes through).

    Returns:
        The text with literals, roles and bold markers reduced to their content.

    Example:
        >>> plain("see ``--out`` and :func:`~meclear_bench.run_benchmark`")
        'see --out and meclear_bench.run_benchmark'
    """
    if text is None:
        return None
    text = _LITERAL.sub(r"\1", text)
    text = _ROLE.sub(lambda m: m.group(1), text)
    return _BOLD.sub(r"\1", text)


def leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[Any]:
    """Every parser under ``parser`` (itself included) with its command path.

    Args:
        parser: The root parser.
        path: The command words leading to it.

    Yields:
        ``(path, parser)`` pairs.
    """
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from leaves(sub, (*path, name))


class _Renamed(argparse.Action):
    """An old flag spelling: stores like the new one and warns once."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        self.new: str = kwargs.pop("new")
        self.inner: argparse.Action = kwargs.pop("inner")
        super().__init__(option_strings, dest, nargs=self.inner.nargs, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(
            f"warning: {option_string} is deprecated; use {self.new} (same meaning)",
            file=sys.stderr,
        )
        self.inner(parser, namespace, values, self.new)


def _rename(parser: argparse.ArgumentParser, old: str, new: str) -> None:
    action = parser._option_string_actions.pop(old)
    action.option_strings = [new if s == old else s for s in action.option_strings]
    if action.nargs != 0 and action.metavar is None:
        action.metavar = new.lstrip("-").replace("-", "_").upper()
    parser._option_string_actions[new] = action
    alias = _Renamed(
        [old],
        action.dest,
        new=new,
        inner=action,
        help=argparse.SUPPRESS,
        type=action.type,
        choices=action.choices,
    )
    parser._add_action(alias)


def _regroup(parser: argparse.ArgumentParser, groups: dict[str, tuple[str, ...]]) -> None:
    made = []
    for title, flags in groups.items():
        group = parser.add_argument_group(title)
        made.append(group)
        for flag in flags:
            action = parser._option_string_actions.get(flag)
            if action is None:
                continue
            for holder in parser._action_groups:
                if action in holder._group_actions and holder is not group:
                    holder._group_actions.remove(action)
            group._group_actions.append(action)
    rest = [g for g in parser._action_groups if g not in made]
    parser._action_groups[:] = rest[:2] + made + rest[2:]  # after positionals and options


def polish(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Apply the module docstring's rules to every command of ``parser``.

    Args:
        parser: The ``meclear`` parser, every command registered.

    Returns:
        ``parser``.
    """
    from .config_file import add_config_flag

    for path, sub in leaves(parser):
        name = " ".join(path)
        renames = RENAMES.get(name, {})
        for old, new in renames.items():
            if old in sub._option_string_actions and new not in sub._option_string_actions:
                _rename(sub, old, new)
        for old, new in renames.items():  # the texts name the flags as they are now
            pattern = re.compile(re.escape(old) + r"(?![\w-])")
            sub.description = pattern.sub(new, sub.description or "") or None
            for action in sub._actions:
                if action.help not in (None, argparse.SUPPRESS):
                    action.help = pattern.sub(new, action.help)
        if name == "bench":
            _regroup(sub, BENCH_GROUPS)
        if sub.description and "\n" in sub.description:
            sub.formatter_class = argparse.RawDescriptionHelpFormatter
        sub.description = plain(sub.description)
        sub.epilog = plain(sub.epilog)
        for action in sub._actions:
            if action.help not in (None, argparse.SUPPRESS):
                action.help = plain(action.help)
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    choice.help = plain(choice.help)
        if path and sub.get_default("handler") is not None:
            add_config_flag(sub)
    return parser
