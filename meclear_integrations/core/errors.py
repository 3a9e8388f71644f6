"""Exceptions raised by the MeClear engine."""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "DuplicateMemoryError",
    "EvaluatorError",
    "MeClearError",
    "ScoreOutOfRangeError",
]


class MeClearError(Exception):
    """Base class of every error raised by meclear-integrations."""


class ConfigurationError(MeClearError, ValueError):
    """A configuration value or an input is not usable."""


class DuplicateMemoryError(MeClearError, ValueError):
    """Two memories in one retrieved context share an id."""


class EvaluatorError(MeClearError):
    """The caller's evaluator raised or misbehaved on a coalition.

    ``coalition`` holds the memory ids of the coalition, ``trial`` the trial index.
    """

    def __init__(self, message: str, *, coalition: tuple[str, ...], trial: int) -> None:
        super().__init__(message)
        self.coalition = coalition
        self.trial = trial


class ScoreOutOfRangeError(EvaluatorError, ValueError):
    """The evaluator returned a score outside [0, 1] (or not a number)."""
