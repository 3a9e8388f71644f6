"""Engine flags shared by ``meclear bench`` and ``meclear explain``, and case sources."""

from __future__ import annotations

import argparse
import sys

from meclear_integrations.cli.engine_flags import add_engine_flags, estimator_flag
from meclear_integrations.core import Budget, ClearanceConfig

__all__ = ["add_engine_flags", "builtin_cases", "engine_config", "estimator_flag"]


def engine_config(args: argparse.Namespace) -> ClearanceConfig:
    """The engine configuration from the flags.

    The package default (``ClearanceConfig()``, as a user gets it), or ``--preset``
    (``default``: the same, ``paper``, ``cheap``), with the flags on top (the simulated
    evaluator runs in-process, so concurrency is 1).

    Args:
        args: The parsed flags.

    Returns:
        The engine configuration.
    """
    overrides: dict[str, object] = {"seed": args.seed, "budget": Budget(max_concurrency=1)}
    preset = getattr(args, "preset", None)
    estimator = estimator_flag(args.estimator, getattr(args, "permutations", None), preset)
    if estimator is not None:
        overrides["estimator"] = estimator
    if getattr(args, "trials", None) is not None:
        overrides["trials"] = args.trials
    return ClearanceConfig.preset(preset or "default", **overrides)


def builtin_cases() -> list:
    """The built-in case set shipped with the package."""
    try:
        from . import load_builtin_cases
    except ImportError:
        print("error: the built-in case set is not available; pass --cases FILE", file=sys.stderr)
        raise SystemExit(2) from None
    return list(load_builtin_cases())
