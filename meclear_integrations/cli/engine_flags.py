"""Engine flags of the commands that run the engine (``--preset``, ``--estimator`` and more)."""

from __future__ import annotations

import argparse
import typing

from ..core.config import EstimatorName
from ..core.errors import ConfigurationError
from ..core.estimators import BernsteinPermutationShapley, Estimator, PermutationShapley

__all__ = ["add_engine_flags", "estimator_flag"]


def _choices(name: str) -> list[str]:
    """Literal values of an engine config type (new engine options appear automatically)."""
    from ..core import config as config_module

    alias = getattr(config_module, name, None)
    return list(typing.get_args(alias)) if alias is not None else []


def add_engine_flags(p: argparse.ArgumentParser) -> None:
    """--preset, --estimator, --permutations, --trials, --seed (None = the config default).

    Args:
        p: The parser the flags are added to.
    """
    presets = _choices("PresetName")
    if presets:
        p.add_argument(
            "--preset",
            choices=presets,
            default=None,
            help="engine preset of the meclear method (flags below override it)",
        )
    p.add_argument("--estimator", choices=list(typing.get_args(EstimatorName)), default=None)
    p.add_argument("--permutations", type=int, default=None, help="L of the permutation estimator")
    p.add_argument("--trials", type=int, default=None, help="T trials per coalition")
    p.add_argument("--seed", type=int, default=0)


def estimator_flag(
    name: str | None, permutations: int | None, preset: str | None
) -> str | Estimator | None:
    """The engine's estimator from ``--estimator`` and ``--permutations``.

    Args:
        name: the ``--estimator`` name (None: the preset's).
        permutations: ``--permutations`` L (None: the estimator's default).
        preset: ``--preset`` (the paper's uses the permutation estimator).

    Returns:
        A name, a permutation estimator with L permutations, or None (the preset's).

    Raises:
        ConfigurationError: ``--permutations`` for an estimator that samples none.
    """
    if permutations is None:
        return name
    if name == "bernstein":
        return BernsteinPermutationShapley(max_permutations=permutations)
    if name == "permutation" or (name is None and preset == "paper"):
        return PermutationShapley(permutations=permutations)
    raise ConfigurationError(
        "--permutations is L of the permutation estimator: add --estimator permutation "
        "(or bernstein, or --preset paper)"
    )
