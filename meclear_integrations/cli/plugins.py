"""Commands of the evaluation harness, found through the ``meclear.commands`` entry points.

The library never imports the harness (``meclear_bench``): the harness declares a
``register(subparsers)`` function in the ``meclear.commands`` entry-point group (pyproject), and
``meclear`` calls every one it finds. Without the harness, its commands still parse and say
how to install it.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import sys
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Any

__all__ = ["HARNESS_COMMANDS", "INSTALL_HINT", "PLUGIN_GROUP", "load_harness", "register_plugins"]

PLUGIN_GROUP = "meclear.commands"
"""The entry-point group of ``register(subparsers)`` functions."""
HARNESS_ENTRY = "meclear_bench.cli:register"
"""The harness of this repository, also found in a source checkout whose installed metadata
predates the entry point."""
HARNESS_COMMANDS = (
    "bench",
    "bench-sweep",
    "bench-redundancy",
    "explain",
    "budget",
    "admission-bench",
)
"""The harness's commands: without it they print :data:`INSTALL_HINT`."""
INSTALL_HINT = (
    "this command belongs to the evaluation harness (meclear_bench), which is not installed: "
    "pip install -e '.[bench]' (or pip install 'meclear-integrations[bench]')"
)


@functools.cache
def _entry_points() -> tuple[EntryPoint, ...]:
    """The plugins' entry points, read once per process.

    Scanning the installed metadata costs about 10 ms; tests and the docs checks build the
    parser hundreds of times.
    """
    found = list(entry_points(group=PLUGIN_GROUP))
    if not any(ep.value == HARNESS_ENTRY for ep in found):
        found.append(EntryPoint(name="bench", value=HARNESS_ENTRY, group=PLUGIN_GROUP))
    return tuple(found)


def register_plugins(sub: Any) -> None:
    """Register every plugin's commands; the harness's missing commands print how to install it.

    Args:
        sub: The ``meclear`` subparsers.
    """
    for ep in _entry_points():
        try:
            register = ep.load()
        except ImportError:
            if ep.value != HARNESS_ENTRY:
                raise
            continue
        register(sub)
    for name in HARNESS_COMMANDS:
        if name not in sub.choices:
            # No option prefix: every flag of the real command lands in ``rest``.
            p = sub.add_parser(name, help="(needs the bench extra)", prefix_chars="\0")
            p.add_argument("rest", nargs="*")
            p.set_defaults(handler=_missing)


def _missing(args: argparse.Namespace) -> int:
    print(f"error: {INSTALL_HINT}", file=sys.stderr)
    return 2


def load_harness(module: str) -> ModuleType:
    """Import a module of the evaluation harness by name (an operator command's measuring mode).

    Args:
        module: The harness module's dotted name.

    Returns:
        The module.

    Raises:
        SystemExit: The harness is not installed (exit status 2, with :data:`INSTALL_HINT`).
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or not module.startswith(exc.name):
            raise
        print(f"error: {INSTALL_HINT}", file=sys.stderr)
        raise SystemExit(2) from None
