"""Framework-agnostic MeClear attribution engine (numpy, pydantic; no framework imports)."""

import logging

from .config import ClearanceConfig, RetryPolicy
from .dedup import AnswerCache
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
from .estimators import AutoShapley, Estimator, ExactShapley, KernelShapley, PermutationShapley
from .evaluation import Evaluator
from .events import StageEvent
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
    "Estimator",
    "Evaluator",
    "EvaluatorError",
    "ExactShapley",
    "InvalidRetrievalError",
    "KernelShapley",
    "MeClearEngine",
    "MeClearError",
    "Memory",
    "MemoryAttribution",
    "PairInteraction",
    "PermutationShapley",
    "RetryPolicy",
    "ScoreOutOfRangeError",
    "StageEvent",
]
