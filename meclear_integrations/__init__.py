"""meclear-integrations: verified clearance of harmful retrieved memories (MeClear).

``import meclear_integrations`` loads nothing heavy: each name below (the engine, numpy,
pydantic, tenacity) is imported on first use. The LangChain and LlamaIndex integrations
live in ``meclear_integrations.langchain`` and ``meclear_integrations.llama_index`` and
need their extras.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_LAZY = {
    **dict.fromkeys(
        [
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
        ],
        ".core",
    ),
    **dict.fromkeys(
        [
            "exact_shapley",
            "hoeffding_epsilon",
            "sufficient_permutations",
            "sufficient_permutations_for_gap",
        ],
        ".core.estimators",
    ),
    "freeze_context": ".core.memory",
}
"""Each exported name's module."""

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


def __getattr__(name: str) -> Any:
    """An exported name, imported from its module on first use (PEP 562).

    ``meclear_integrations.core`` is loaded with the first name, as it was with the package.
    """
    module = _LAZY.get(name)
    if module is None:
        if name == "core":
            return import_module(".core", __name__)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
