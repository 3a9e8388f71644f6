"""Framework-agnostic MeClear attribution engine (numpy, pydantic; no framework imports).

Every name below is imported from its module on first use (PEP 562): ``from
meclear_integrations.core.errors import ...`` or ``from meclear_integrations.core import
ConfigurationError`` does not load the engine or numpy.
"""

import logging
from typing import TYPE_CHECKING

from .lazy import lazy_exports

if TYPE_CHECKING:
    from .config import (
        Budget,
        ClearanceConfig,
        EarlyStops,
        FailurePolicy,
        RetryPolicy,
        Verification,
    )
    from .engine import MeClearEngine
    from .errors import (
        BudgetExceededError,
        ClearanceFailedError,
        ConfigurationError,
        DuplicateMemoryError,
        EvaluatorError,
        InvalidRetrievalError,
        MeClearError,
        ScoreOutOfRangeError,
    )
    from .estimators import AutoShapley, Estimator, ExactShapley, PermutationShapley
    from .events import StageEvent
    from .judging.dispatch import AnswerCache
    from .judging.evaluator import Evaluator
    from .memory import Memory
    from .report import (
        ClearanceCandidate,
        ClearanceCost,
        ClearanceFailure,
        ClearanceReport,
        ClearanceStatus,
        MemoryAttribution,
        PairInteraction,
    )

logging.getLogger(__name__).addHandler(logging.NullHandler())  # a library: no default output

__all__ = [
    "AnswerCache",
    "AutoShapley",
    "Budget",
    "BudgetExceededError",
    "ClearanceCandidate",
    "ClearanceConfig",
    "ClearanceCost",
    "ClearanceFailedError",
    "ClearanceFailure",
    "ClearanceReport",
    "ClearanceStatus",
    "ConfigurationError",
    "DuplicateMemoryError",
    "EarlyStops",
    "Estimator",
    "Evaluator",
    "EvaluatorError",
    "ExactShapley",
    "FailurePolicy",
    "InvalidRetrievalError",
    "MeClearEngine",
    "MeClearError",
    "Memory",
    "MemoryAttribution",
    "PairInteraction",
    "PermutationShapley",
    "RetryPolicy",
    "ScoreOutOfRangeError",
    "StageEvent",
    "Verification",
]

_LAZY = {
    **dict.fromkeys(
        [
            "Budget",
            "ClearanceConfig",
            "EarlyStops",
            "FailurePolicy",
            "RetryPolicy",
            "Verification",
        ],
        ".config",
    ),
    "MeClearEngine": ".engine",
    **dict.fromkeys(
        [
            "BudgetExceededError",
            "ClearanceFailedError",
            "ConfigurationError",
            "DuplicateMemoryError",
            "EvaluatorError",
            "InvalidRetrievalError",
            "MeClearError",
            "ScoreOutOfRangeError",
        ],
        ".errors",
    ),
    **dict.fromkeys(
        [
            "AutoShapley",
            "Estimator",
            "ExactShapley",
            "PermutationShapley",
        ],
        ".estimators",
    ),
    "StageEvent": ".events",
    "AnswerCache": ".judging.dispatch",
    "Evaluator": ".judging.evaluator",
    "Memory": ".memory",
    **dict.fromkeys(
        [
            "ClearanceCandidate",
            "ClearanceCost",
            "ClearanceFailure",
            "ClearanceReport",
            "ClearanceStatus",
            "MemoryAttribution",
            "PairInteraction",
        ],
        ".report",
    ),
}
"""Each lazily exported name's module."""

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
