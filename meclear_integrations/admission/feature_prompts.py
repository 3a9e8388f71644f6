"""Feature-extraction prompts of the baselines (delimited data, strict JSON out)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from . import prompts as P
from .prompts import DATA_NOTICE, fence

__all__ = [
    "TASK_FEATURES",
    "AMACFeatures",
    "AMEMFeatures",
    "ContentType",
    "MemoryBankFeatures",
    "feature_prompt",
    "is_admission_prompt",
]

TASK_FEATURES = "# Task: memory feature extraction"

_CONMEM_TASKS = frozenset(
    {
        P.TASK_GENERATE,
        P.TASK_VALIDATE,
        P.TASK_REPAIR,
        P.TASK_RESPOND,
        P.TASK_JUDGE,
        P.TASK_AUDIT,
        P.TASK_TIE_BREAK,
        P.TASK_REASON,
    }
)


def is_admission_prompt(prompt: str) -> bool:
    """Whether ``prompt`` starts with a ConMem or baseline-feature ``# Task:`` line.

    Args:
        prompt: The prompt.

    Returns:
        True for the prompts the admission gate and its baselines send a model.
    """
    task = prompt.split("\n", 1)[0]
    return task in _CONMEM_TASKS or task.startswith(TASK_FEATURES)


ContentType = Literal[
    "preference", "stable_fact", "goal", "relationship", "event", "opinion", "transient"
]

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)


def _to_float(value: object) -> object:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


class AMACFeatures(BaseModel):
    """A-MAC's model-assessed features: future utility and content type."""

    model_config = _STRICT

    utility: float = Field(ge=0.0, le=1.0)
    """Expected future utility in [0, 1]."""
    content_type: ContentType
    """Content category, mapped to a type prior."""

    @field_validator("utility", mode="before")
    @classmethod
    def _number(cls, value: object) -> object:
        return _to_float(value)


class AMEMFeatures(BaseModel):
    """A-MEM's model-assessed importance."""

    model_config = _STRICT

    importance: int = Field(ge=1, le=10)
    """Importance on 1-10."""


class MemoryBankFeatures(BaseModel):
    """MemoryBank's model-assessed importance and relevance."""

    model_config = _STRICT

    importance: int = Field(ge=1, le=10)
    """Importance on 1-10."""
    relevance: float = Field(ge=0.0, le=1.0)
    """Semantic relevance to the user's ongoing needs in [0, 1]."""

    @field_validator("relevance", mode="before")
    @classmethod
    def _number(cls, value: object) -> object:
        return _to_float(value)


_ASK = {
    "a-mac": (
        "Rate the candidate memory's expected future utility for personalising later "
        "conversations (0 = useless, 1 = essential) and classify its content type.",
        '{"utility": <number in [0, 1]>, "content_type": "preference"|"stable_fact"|"goal"|'
        '"relationship"|"event"|"opinion"|"transient"}',
    ),
    "a-mem": (
        "Rate how important the candidate memory is to remember about the user "
        "(1 = trivial, 10 = crucial).",
        '{"importance": <integer 1-10>}',
    ),
    "memorybank": (
        "Rate how important the candidate memory is (1 = trivial, 10 = crucial) and how "
        "relevant it is to the user's ongoing needs (0 = unrelated, 1 = central).",
        '{"importance": <integer 1-10>, "relevance": <number in [0, 1]>}',
    ),
}


def feature_prompt(method: str, candidate: str, context: str) -> str:
    """The feature-extraction prompt of ``method``.

    Args:
        method: The baseline's name (``a-mac``, ``a-mem``, ``memorybank``).
        candidate: The candidate memory's text.
        context: Its historical context.

    Returns:
        The prompt text.
    """
    ask, shape = _ASK[method]
    return "\n\n".join(
        [
            TASK_FEATURES + f" ({method})",
            DATA_NOTICE,
            "Historical Context:\n" + fence("HISTORICAL_CONTEXT", context),
            "Candidate Memory:\n" + fence("CANDIDATE_MEMORY", candidate),
            ask,
            f"Return only a JSON object: {shape}",
        ]
    )
