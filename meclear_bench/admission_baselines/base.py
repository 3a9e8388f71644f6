"""Shared pieces of the feature-scoring admission baselines (ConMem paper Sec. 5.1-5.2)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from meclear_integrations.admission.calls import CallMeter, CallRunner, ModelCall
from meclear_integrations.admission.config import AdmissionConfig
from meclear_integrations.admission.decision import AdmissionCost, StageError
from meclear_integrations.admission.labels import Decision
from meclear_integrations.admission.model import TextModel, as_text_model
from meclear_integrations.admission.prompts import Context, render_context

__all__ = ["BaselineDecision", "FeatureBaseline"]


class BaselineDecision(BaseModel):
    """A baseline's decision: a weighted feature score against a threshold."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: str
    """Baseline name (``a-mac``, ``a-mem``, ``memorybank``)."""
    candidate: str
    """The candidate memory."""
    candidate_id: str | None = None
    """Caller's id, if any."""
    decision: Decision | None
    """store when score >= threshold; None when feature extraction failed."""
    score: float | None = None
    """The weighted feature score in [0, 1]."""
    threshold: float
    """The admission threshold."""
    features: dict[str, Any] = Field(default_factory=dict)
    """Every feature value (model-extracted and rule-based)."""
    error: StageError | None = None
    """Feature extraction that never parsed, if it did not."""
    cost: AdmissionCost
    """Model calls and time."""

    @property
    def ok(self) -> bool:
        """Whether the baseline reached a decision."""
        return self.decision is not None


class FeatureBaseline:
    """A baseline = one strict model call extracting features + a rule-based score.

    Subclasses set ``name``, ``threshold`` and implement ``prompt``, ``schema`` and ``score``.
    Parsing, retries and costs reuse the ConMem call runner (same model interface).

    Args:
        model: A :class:`TextModel` or a function ``prompt -> str`` (the feature extractor).
        config: Retries and limits of the model call.
    """

    name: str = ""
    threshold: float = 0.5

    def __init__(
        self,
        model: TextModel | Callable[[str], str | Awaitable[str]],
        *,
        config: AdmissionConfig | None = None,
    ) -> None:
        self.model = as_text_model(model)
        self.config = config if config is not None else AdmissionConfig()

    # -- to implement ----------------------------------------------------------------
    schema: type[BaseModel]

    def prompt(self, candidate: str, context: str) -> str:
        """The feature-extraction prompt for one candidate memory.

        Args:
            candidate: The candidate memory's text.
            context: Its historical context.

        Returns:
            The prompt text.
        """
        raise NotImplementedError

    def score(self, extracted: BaseModel, candidate: str, context: str) -> tuple[float, dict]:
        """(score, all features) from the extracted features and rule-based ones.

        Args:
            extracted: The features the model extracted (an instance of ``schema``).
            candidate: The candidate memory's text.
            context: Its historical context.

        Returns:
            ``(score, all features)``.
        """
        raise NotImplementedError

    # -- drivers ---------------------------------------------------------------------
    def _call(self, candidate: str, context: str) -> ModelCall:
        return ModelCall("features", self.prompt(candidate, context), self.schema)

    def _decide(self, candidate, candidate_id, context, result, meter, started) -> BaselineDecision:
        cost = meter.cost(time.perf_counter() - started)
        if not result.ok:
            return BaselineDecision(
                method=self.name,
                candidate=candidate,
                candidate_id=candidate_id,
                decision=None,
                threshold=self.threshold,
                error=StageError(
                    stage="features",
                    message=f"{self.name} feature extraction never parsed",
                    failures=[result.failure],
                ),
                cost=cost,
            )
        value, features = self.score(result.value, candidate, context)
        value = min(1.0, max(0.0, value))
        return BaselineDecision(
            method=self.name,
            candidate=candidate,
            candidate_id=candidate_id,
            decision="store" if value >= self.threshold else "do_not_store",
            score=value,
            threshold=self.threshold,
            features=features,
            cost=cost,
        )

    def decide(
        self, candidate: str, context: Context, *, candidate_id: str | None = None
    ) -> BaselineDecision:
        """Score ``candidate`` and compare with the threshold (sync).

        Args:
            candidate: The candidate memory's text.
            context: Its historical context (text or ``{"role", "content"}`` turns).
            candidate_id: The candidate's id in the decision.

        Returns:
            The decision: store / do-not-store, the score and the features.
        """
        started, meter = time.perf_counter(), CallMeter()
        text = render_context(context)
        result = CallRunner(self.model, self.config, meter).run(self._call(candidate, text))
        return self._decide(candidate, candidate_id, text, result, meter, started)

    async def adecide(
        self, candidate: str, context: Context, *, candidate_id: str | None = None
    ) -> BaselineDecision:
        """Async ``decide``.

        Args:
            candidate: The candidate memory's text.
            context: Its historical context (text or ``{"role", "content"}`` turns).
            candidate_id: The candidate's id in the decision.

        Returns:
            The decision: store / do-not-store, the score and the features.
        """
        started, meter = time.perf_counter(), CallMeter()
        text = render_context(context)
        result = await CallRunner(self.model, self.config, meter).arun(self._call(candidate, text))
        return self._decide(candidate, candidate_id, text, result, meter, started)
