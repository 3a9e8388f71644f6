"""Framework-agnostic MeClear attribution engine (numpy, pydantic; no framework imports)."""

from .config import ClearanceConfig, ClearanceSearch, EstimatorName, PresetName, StoppingRule
from .dedup import AnswerCache, DedupStats, SingleFlightCache, adedup_evaluator, dedup_evaluator
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
    "AnswerCache",
    "ClearanceCandidate",
    "ClearanceConfig",
    "ClearanceCost",
    "ClearanceReport",
    "ClearanceSearch",
    "ConfigurationError",
    "DedupStats",
    "DuplicateMemoryError",
    "EstimatorName",
    "Evaluator",
    "EvaluatorError",
    "MeClearEngine",
    "MeClearError",
    "Memory",
    "MemoryAttribution",
    "PairInteraction",
    "PresetName",
    "ScoreOutOfRangeError",
    "SingleFlightCache",
    "StageEvent",
    "StageListener",
    "StoppingRule",
    "adedup_evaluator",
    "dedup_evaluator",
    "exact_shapley",
    "freeze_context",
    "hoeffding_epsilon",
    "sufficient_permutations",
    "sufficient_permutations_for_gap",
]
