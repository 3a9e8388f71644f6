"""The ``meclear`` command line. Each command lives in its own module with ``register``."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main"]

# (command module, one-line help). Modules are imported only when their command runs,
# except for registering arguments, which is cheap.
COMMANDS: list[str] = [
    "meclear_integrations.cli.demo",
    "meclear_integrations.cli.soak",
    "meclear_integrations.cli.ledger",
    "meclear_integrations.cli.worker",
]


def build_parser() -> argparse.ArgumentParser:
    """The ``meclear`` argument parser with every subcommand registered.

    Returns:
        The parser; each subcommand sets ``handler`` on the parsed namespace.
    """
    parser = argparse.ArgumentParser(
        prog="meclear",
        description=(
            "MeClear: verified, query-scoped clearance of harmful retrieved memories. "
            "Offline figures come from the simulated evidence world (not a real LLM)."
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    from .plugins import register_plugins

    register_plugins(sub)  # the evaluation harness's commands (meclear_bench), when installed
    from .polish import polish

    return polish(parser)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``meclear`` command line.

    Args:
        argv: The arguments (None: ``sys.argv[1:]``).

    Returns:
        The exit status: the subcommand's (0 when it returns None); 0 with no command (the
        help is printed).

    Example:
        >>> from meclear_integrations.cli import main
        >>> main(["demo"])  # doctest: +SKIP
        0
    """
    from .config_file import apply_config

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    apply_config(parser, argv)
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 0 if args.command is None else 2
    from ._safe import safe_output

    try:
        with safe_output():  # stored text is hostile: no raw control character reaches a terminal
            code = int(args.handler(args) or 0)
            sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:
        _quiet_stdout()
        return 1
    except ImportError as exc:  # a missing optional extra: one line naming it, exit 2
        from .extras import missing_extra_message

        message = missing_extra_message(exc, args.command)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 2


def _quiet_stdout() -> None:
    """The reader of stdout went away (``meclear ... | head``): stop without a traceback.

    Python's documented recipe: point stdout at /dev/null so that the flush at exit does not
    raise again.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # pragma: no cover - stdout is no file (tests capture it)
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
