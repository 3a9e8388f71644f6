"""The harness's ``meclear`` commands (entry points ``meclear.commands``)."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["COMMANDS", "register"]

# Command modules, each with ``register(subparsers)``.
COMMANDS: list[str] = [
    "meclear_bench.cli.bench",
    "meclear_bench.cli.bench_sweep",
    "meclear_bench.cli.bench_redundancy",
    "meclear_bench.cli.explain",
    "meclear_bench.cli.budget",
    "meclear_bench.cli.admission_bench",
    "meclear_bench.cli.judge_check",
]


def register(sub: Any) -> None:
    """Register the harness's commands on the ``meclear`` subparsers.

    Args:
        sub: The subparsers of the ``meclear`` parser.
    """
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
