"""meclear-integrations: verified clearance of harmful retrieved memories (MeClear).

``import meclear_integrations`` loads the engine only (numpy, pydantic, tenacity); the
LangChain and LlamaIndex integrations live in ``meclear_integrations.langchain`` and
``meclear_integrations.llama_index`` and need their extras.
"""

from .core import (
    ClearanceCandidate,
    ClearanceConfig,
    ClearanceCost,
    ClearanceReport,
    ConfigurationError,
    DuplicateMemoryError,
    EvaluatorError,
    MeClearEngine,
    MeClearError,
    Memory,
    MemoryAttribution,
    PairInteraction,
    ScoreOutOfRangeError,
    StageEvent,
)
from .core.estimators import (
    exact_shapley,
    hoeffding_epsilon,
    sufficient_permutations,
    sufficient_permutations_for_gap,
)
from .core.memory import freeze_context

__version__ = "0.1.0"

__all__ = [
    "ClearanceCandidate",
    "ClearanceConfig",
    "ClearanceCost",
    "ClearanceReport",
    "ConfigurationError",
    "DuplicateMemoryError",
    "EvaluatorError",
    "MeClearEngine",
    "MeClearError",
    "Memory",
    "MemoryAttribution",
    "PairInteraction",
    "ScoreOutOfRangeError",
    "StageEvent",
    "__version__",
    "exact_shapley",
    "freeze_context",
    "hoeffding_epsilon",
    "sufficient_permutations",
    "sufficient_permutations_for_gap",
]
