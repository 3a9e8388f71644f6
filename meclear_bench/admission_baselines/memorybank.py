"""MemoryBank baseline (Zhong et al., 2024) as scored in the ConMem paper (Sec. 5.2).

score = 0.3 R + 0.4 L + 0.3 I: R recency (Ebbinghaus-style decay, 1.0 for a fresh
candidate: "adapted to benchmark constraints"), L the model's relevance in [0, 1], I the
model's importance normalised from 1-10. The paper gives no threshold; 0.5 is this
project's default.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import BaseModel

from meclear_integrations.admission.config import AdmissionConfig
from meclear_integrations.admission.feature_prompts import MemoryBankFeatures, feature_prompt
from meclear_integrations.admission.features import recency
from meclear_integrations.admission.model import TextModel

from .base import FeatureBaseline

__all__ = ["MemoryBankBaseline"]


class MemoryBankBaseline(FeatureBaseline):
    """Recency, relevance and importance.

    Args:
        model: A :class:`TextModel` or a function ``prompt -> str`` (the feature extractor).
        weights: The weights of recency, relevance and importance.
        threshold: The admission threshold of the weighted score.
        age_hours: The candidate's age.
        half_life_hours: The recency half-life.
        config: Retries and limits of the model call.
    """

    name = "memorybank"
    schema = MemoryBankFeatures

    def __init__(
        self,
        model: TextModel | Callable[[str], str | Awaitable[str]],
        *,
        weights: tuple[float, float, float] = (0.3, 0.4, 0.3),
        threshold: float = 0.5,
        age_hours: float = 0.0,
        half_life_hours: float = 24.0 * 30,
        config: AdmissionConfig | None = None,
    ) -> None:
        super().__init__(model, config=config)
        self.weights = weights
        self.threshold = threshold
        self.age_hours = age_hours
        self.half_life_hours = half_life_hours

    def prompt(self, candidate: str, context: str) -> str:
        """The feature-extraction prompt for one candidate memory.

        Args:
            candidate: The candidate memory's text.
            context: Its historical context.

        Returns:
            The prompt text.
        """
        return feature_prompt(self.name, candidate, context)

    def score(self, extracted: BaseModel, candidate: str, context: str) -> tuple[float, dict]:
        """The baseline's score and every feature value.

        Args:
            extracted: The features the model extracted (an instance of ``schema``).
            candidate: The candidate memory's text.
            context: Its historical context.

        Returns:
            ``(score in [0, 1], all features)`` from the extracted and the rule-based features.
        """
        assert isinstance(extracted, MemoryBankFeatures)
        feats = {
            "recency": recency(self.age_hours, self.half_life_hours),
            "relevance": extracted.relevance,
            "importance": (extracted.importance - 1) / 9,
        }
        value = sum(w * v for w, v in zip(self.weights, feats.values(), strict=True))
        return value, {**feats, "importance_raw": extracted.importance}
