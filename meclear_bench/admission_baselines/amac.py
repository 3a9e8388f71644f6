"""A-MAC baseline (Zhang et al., 2026), as configured in the ConMem paper (Sec. 5.2).

score = w . (U, C, N, R, T) with weights (0.1, 0.1, 0.1, 0.1, 0.6) and threshold 0.55:
U future utility (model), C factual confidence (ROUGE-L grounding in the context),
N semantic novelty (1 - max lexical similarity to existing memories), R recency
(exponential decay; 1.0 for a just-extracted candidate), T content-type prior (model
category -> prior). The type-prior table is this project's choice (documented default).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

from pydantic import BaseModel

from meclear_integrations.admission.config import AdmissionConfig
from meclear_integrations.admission.feature_prompts import AMACFeatures, feature_prompt
from meclear_integrations.admission.features import lexical_novelty, recency, rouge_l_grounding
from meclear_integrations.admission.model import TextModel

from .base import FeatureBaseline

__all__ = ["DEFAULT_TYPE_PRIORS", "AMACBaseline"]

DEFAULT_TYPE_PRIORS: Mapping[str, float] = {
    "preference": 0.9,
    "stable_fact": 0.8,
    "goal": 0.7,
    "relationship": 0.7,
    "event": 0.5,
    "opinion": 0.4,
    "transient": 0.1,
}


class AMACBaseline(FeatureBaseline):
    """Five-feature linear admission with the published policy weights.

    Args:
        model: A :class:`TextModel` or a function ``prompt -> str`` (the feature extractor).
        weights: The weights of utility, confidence, novelty, recency and type prior.
        threshold: The admission threshold of the weighted score.
        type_priors: Content type -> prior.
        existing_memories: The memories already stored (for novelty).
        age_hours: The candidate's age.
        half_life_hours: The recency half-life.
        config: Retries and limits of the model call.
    """

    name = "a-mac"
    schema = AMACFeatures

    def __init__(
        self,
        model: TextModel | Callable[[str], str | Awaitable[str]],
        *,
        weights: tuple[float, float, float, float, float] = (0.1, 0.1, 0.1, 0.1, 0.6),
        threshold: float = 0.55,
        type_priors: Mapping[str, float] = DEFAULT_TYPE_PRIORS,
        existing_memories: Sequence[str] = (),
        age_hours: float = 0.0,
        half_life_hours: float = 24.0 * 30,
        config: AdmissionConfig | None = None,
    ) -> None:
        super().__init__(model, config=config)
        self.weights = weights
        self.threshold = threshold
        self.type_priors = dict(type_priors)
        self.existing_memories = tuple(existing_memories)
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
        assert isinstance(extracted, AMACFeatures)
        feats = {
            "utility": extracted.utility,
            "confidence": rouge_l_grounding(candidate, context),
            "novelty": lexical_novelty(candidate, self.existing_memories),
            "recency": recency(self.age_hours, self.half_life_hours),
            "type_prior": self.type_priors[extracted.content_type],
        }
        value = sum(w * v for w, v in zip(self.weights, feats.values(), strict=True))
        return value, {**feats, "content_type": extracted.content_type}
