"""A-MEM baseline (Xu et al., 2025) as scored in the ConMem paper (Sec. 5.2).

score = 0.7 I_norm + 0.3 N, threshold 0.5: I_norm = (importance - 1) / 9 from the model's
1-10 rating, N = 1 - max lexical similarity to existing memories (1.0 with none).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from pydantic import BaseModel

from meclear_integrations.admission.config import AdmissionConfig
from meclear_integrations.admission.feature_prompts import AMEMFeatures, feature_prompt
from meclear_integrations.admission.features import lexical_novelty
from meclear_integrations.admission.model import TextModel

from .base import FeatureBaseline

__all__ = ["AMEMBaseline"]


class AMEMBaseline(FeatureBaseline):
    """Normalised importance plus novelty.

    Args:
        model: A :class:`TextModel` or a function ``prompt -> str`` (the feature extractor).
        importance_weight: The weight of the normalised importance.
        novelty_weight: The weight of lexical novelty.
        threshold: The admission threshold of the weighted score.
        existing_memories: The memories already stored (for novelty).
        config: Retries and limits of the model call.
    """

    name = "a-mem"
    schema = AMEMFeatures

    def __init__(
        self,
        model: TextModel | Callable[[str], str | Awaitable[str]],
        *,
        importance_weight: float = 0.7,
        novelty_weight: float = 0.3,
        threshold: float = 0.5,
        existing_memories: Sequence[str] = (),
        config: AdmissionConfig | None = None,
    ) -> None:
        super().__init__(model, config=config)
        self.importance_weight = importance_weight
        self.novelty_weight = novelty_weight
        self.threshold = threshold
        self.existing_memories = tuple(existing_memories)

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
        assert isinstance(extracted, AMEMFeatures)
        i_norm = (extracted.importance - 1) / 9
        novelty = lexical_novelty(candidate, self.existing_memories)
        value = self.importance_weight * i_norm + self.novelty_weight * novelty
        return value, {"importance": extracted.importance, "i_norm": i_norm, "novelty": novelty}
