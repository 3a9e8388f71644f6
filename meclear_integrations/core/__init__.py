"""Framework-agnostic MeClear attribution engine (numpy, pydantic; no framework imports)."""

import logging

from .budget import RunBudget
from .config import (
    Budget,
    ClearanceConfig,
    ClearanceSearch,
    EarlyStops,
    EstimatorName,
    FailureMode,
    FailurePolicy,
    HarmRule,
    PresetName,
    RetryPolicy,
    Verification,
)
from .dedup import AnswerCache, DedupStats, SingleFlightCache, adedup_evaluator, dedup_evaluator
from .engine import MeClearEngine
from .errors import (
    BudgetExceededError,
    ClearanceFailedError,
    ConfigurationError,
    ConfigurationTypeError,
    DuplicateMemoryError,
    EstimatorError,
    EvaluatorError,
    InvalidRetrievalError,
    MeClearError,
    RedactedError,
    ScoreOutOfRangeError,
    TooManyMemoriesError,
    TransientError,
)
from .estimators import (
    AutoShapley,
    BernsteinPermutationShapley,
    Estimator,
    ExactShapley,
    HierarchicalShapley,
    KernelShapley,
    PermutationShapley,
    ShapleyEstimate,
    ShapleyEstimator,
    exact_shapley,
    hoeffding_epsilon,
    sufficient_permutations,
    sufficient_permutations_for_gap,
)
from .evaluation import Evaluator
from .events import StageEvent, StageListener
from .faults import is_transient, retry_after, sanitize
from .memory import Memory, freeze_context
from .prior import PriorCandidate
from .redaction import REDACTED, redact, redact_payload
from .report import (
    ClearanceCandidate,
    ClearanceCost,
    ClearanceFailure,
    ClearanceReport,
    ClearanceStatus,
    FailedCoalition,
    FailureReason,
    MemoryAttribution,
    PairInteraction,
)
from .retry import CallRetrier

logging.getLogger(__name__).addHandler(logging.NullHandler())  # a library: no default output

__all__ = [
    "REDACTED",
    "AnswerCache",
    "AutoShapley",
    "BernsteinPermutationShapley",
    "Budget",
    "BudgetExceededError",
    "CallRetrier",
    "ClearanceCandidate",
    "ClearanceConfig",
    "ClearanceCost",
    "ClearanceFailedError",
    "ClearanceFailure",
    "ClearanceReport",
    "ClearanceSearch",
    "ClearanceStatus",
    "ConfigurationError",
    "ConfigurationTypeError",
    "DedupStats",
    "DuplicateMemoryError",
    "EarlyStops",
    "Estimator",
    "EstimatorError",
    "EstimatorName",
    "Evaluator",
    "EvaluatorError",
    "ExactShapley",
    "FailedCoalition",
    "FailureMode",
    "FailurePolicy",
    "FailureReason",
    "HarmRule",
    "HierarchicalShapley",
    "InvalidRetrievalError",
    "KernelShapley",
    "MeClearEngine",
    "MeClearError",
    "Memory",
    "MemoryAttribution",
    "PairInteraction",
    "PermutationShapley",
    "PresetName",
    "PriorCandidate",
    "RedactedError",
    "RetryPolicy",
    "RunBudget",
    "ScoreOutOfRangeError",
    "ShapleyEstimate",
    "ShapleyEstimator",
    "SingleFlightCache",
    "StageEvent",
    "StageListener",
    "TooManyMemoriesError",
    "TransientError",
    "Verification",
    "adedup_evaluator",
    "dedup_evaluator",
    "exact_shapley",
    "freeze_context",
    "hoeffding_epsilon",
    "is_transient",
    "redact",
    "redact_payload",
    "retry_after",
    "sanitize",
    "sufficient_permutations",
    "sufficient_permutations_for_gap",
]
