"""An estimator's numerical failure as :class:`~..errors.EstimatorError`.

The engine calls every estimator step through :func:`guarded`, so an overflow, a singular
system or an allocation failure after evaluator calls were spent fails open (context
unchanged, ``reason="estimator_error"``) or closed like an evaluator failure, instead of
escaping as a bare numpy / Python error. Any other exception is a bug and propagates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

import numpy as np

from ..errors import EstimatorError
from .base import ShapleyEstimator

__all__ = ["NUMERICAL_FAILURES", "guarded"]

NUMERICAL_FAILURES: tuple[type[BaseException], ...] = (
    ArithmeticError,
    np.linalg.LinAlgError,
    MemoryError,
)
"""What counts as an estimator failure (ArithmeticError covers OverflowError,
ZeroDivisionError and FloatingPointError)."""

P = ParamSpec("P")
R = TypeVar("R")


def guarded(
    estimator: ShapleyEstimator, step: Callable[P, R], *args: P.args, **kwargs: P.kwargs
) -> R:
    """``step(*args, **kwargs)``, with a numerical failure re-raised as EstimatorError.

    Args:
        estimator: the estimator (named in the error).
        step: its plan, extend or estimate.
        *args: passed to ``step``.
        **kwargs: passed to ``step``.

    Returns:
        What ``step`` returns.

    Raises:
        EstimatorError: ``step`` failed numerically.
    """
    try:
        return step(*args, **kwargs)
    except NUMERICAL_FAILURES as exc:
        raise EstimatorError(
            f"the {estimator.name} estimator failed: {type(exc).__name__}: {exc}"
        ) from exc
