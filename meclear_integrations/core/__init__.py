"""Framework-agnostic MeClear attribution engine (numpy, pydantic; no framework imports)."""

from .config import ClearanceConfig, EstimatorName
from .engine import MeClearEngine
from .errors import (
    ConfigurationError,
    DuplicateMemoryError,
    EvaluatorError,
    MeClearError,
    ScoreOutOfRangeError,
)
from .estimators import (
    exact_shapley,
    hoeffding_epsilon,
    sufficient_permutations,
    sufficient_permutations_for_gap,
)
from .evaluation import Evaluator
from .events import StageEvent, StageListener
from .memory import Memory, freeze_context
from .report import (
    ClearanceCandidate,
    ClearanceCost,
    ClearanceReport,
    MemoryAttribution,
    PairInteraction,
)

__all__ = [
    "ClearanceCandidate",
    "ClearanceConfig",
    "ClearanceCost",
    "ClearanceReport",
    "ConfigurationError",
    "DuplicateMemoryError",
    "EstimatorName",
    "Evaluator",
    "EvaluatorError",
    "MeClearEngine",
    "MeClearError",
    "Memory",
    "MemoryAttribution",
    "PairInteraction",
    "ScoreOutOfRangeError",
    "StageEvent",
    "StageListener",
    "exact_shapley",
    "freeze_context",
    "hoeffding_epsilon",
    "sufficient_permutations",
    "sufficient_permutations_for_gap",
]
