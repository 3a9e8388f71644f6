"""Framework-agnostic MeClear attribution engine (numpy, pydantic; no framework imports)."""

import logging

from .config import Budget, ClearanceConfig, EarlyStops, FailurePolicy, RetryPolicy, Verification
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
from .judging.dedup import AnswerCache
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
