"""One query's real agent and judge, run and paid for as a user of the integrations would.

:class:`RealQuery` is the engine's ``evaluate(coalition, trial) -> score`` (Eq. 2's
one-trial utility) over real chat models, through the package's own pieces: the answer
prompt of the integrations
(:func:`~meclear_integrations.judges.answer_prompts.format_answer_prompt`,
the prompt of ``ClearingRetriever``'s default agent), the package's LLM judges
(:class:`~meclear_integrations.judges.ReferenceLLMJudge`, or
:class:`~meclear_integrations.judges.ReferenceFreeLLMJudge` shown the coalition or the
full context) and the per-query :class:`~meclear_integrations.core.judging.dispatch.AnswerCache`
(a deterministic agent answers each prompt once across trials; the judge sees each
distinct answer once, or each (answer, coalition) when it reads the coalition).

A reference-free judge that accepts two different answers to one query contradicts
itself: every later evaluation raises
:class:`~meclear_integrations.core.errors.InconsistentVerdictsError`, and the method
abstains, as it would in the integrations.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 2.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence
from typing import Literal

from meclear_integrations.core.errors import InconsistentVerdictsError
from meclear_integrations.core.judging.dispatch import AnswerCache
from meclear_integrations.core.memory import Memory
from meclear_integrations.judges import (
    ExactMatchJudge,
    ReferenceFreeLLMJudge,
    ReferenceLLMJudge,
)
from meclear_integrations.judges.answer_prompts import format_answer_prompt
from meclear_integrations.simulation.world import normalize_answer

from .cases import BenchCase
from .model_client import CallMeter, ModelClient

__all__ = ["EXACT_LABEL", "JudgeMode", "RealQuery", "answer_prompt"]

JudgeMode = Literal["reference", "exact", "coalition", "full"]
"""What grades an answer: the judge model given the gold reference, the normalised
containment of the gold reference (``exact``: no model, as QA benchmarks score short
answers), or the judge model reference-free, shown the coalition the agent saw or the full
retrieved context."""

EXACT_LABEL = "exact match (normalised containment of the gold reference; no model)"
"""How reports name the ``exact`` judge."""


def answer_prompt(
    case: BenchCase, coalition: Sequence[Memory], metadata_keys: Sequence[str] = ()
) -> str:
    """The agent's prompt for ``coalition`` (memories in retrieval order).

    Args:
        case: The benchmark case.
        coalition: The memories kept.
        metadata_keys: The memory metadata shown to the agent.

    Returns:
        The prompt.
    """
    return format_answer_prompt(case.query, coalition, metadata_keys=metadata_keys)


def judge_for(
    judge: ModelClient, mode: JudgeMode
) -> ReferenceLLMJudge | ReferenceFreeLLMJudge | ExactMatchJudge:
    """The package's judge for ``mode``: an LLM judge over the judge client, or the rule judge.

    Args:
        judge: The judge model's client (not called by the ``exact`` judge).
        mode: ``reference``, ``exact``, ``coalition`` or ``full``.

    Returns:
        The judge.
    """
    if mode == "exact":
        return ExactMatchJudge(mode="contains")
    model = judge.text_model()
    if mode == "reference":
        return ReferenceLLMJudge(model)
    return ReferenceFreeLLMJudge(model)


class RealQuery:
    """Evaluator of one case with a real agent and judge; counts what it pays in ``meter``.

    Args:
        case: The benchmark case.
        agent: The agent model's client.
        judge: The judge model's client.
        mode: The judge mode: ``reference``, ``coalition`` or ``full``.
        metadata_keys: The memory metadata shown to the agent.
    """

    def __init__(
        self,
        case: BenchCase,
        agent: ModelClient,
        judge: ModelClient,
        *,
        mode: JudgeMode = "reference",
        metadata_keys: Sequence[str] = (),
    ) -> None:
        self.case = case
        self.agent = agent
        self.mode = mode
        self.metadata_keys = tuple(metadata_keys)
        self.judge = judge_for(judge, mode)
        self.context = tuple(case.context())
        self.cache = AnswerCache(deterministic=agent.spec.deterministic)
        self.meter = CallMeter()
        self.accepted: set[str] = set()
        self._lock = threading.Lock()

    def answer(self, coalition: tuple[Memory, ...], trial: int) -> str:
        """The agent's answer on ``coalition`` (trial ``trial``; deduplicated).

        Args:
            coalition: The memories kept.
            trial: The trial index.

        Returns:
            The answer.
        """
        prompt = answer_prompt(self.case, coalition, self.metadata_keys)
        draw = 0 if self.agent.spec.deterministic else int(trial)
        return self.cache.answer(prompt, trial, lambda: self.agent.complete(prompt, draw=draw))

    def _judge_key(self, answer: str, coalition: tuple[Memory, ...]) -> Hashable:
        if self.mode == "coalition":
            return (answer.strip(), tuple(m.id for m in coalition))
        return answer.strip()

    def _verdict(self, answer: str, coalition: tuple[Memory, ...]) -> float:
        shown = {"coalition": coalition, "full": self.context}.get(self.mode)
        reference = self.case.reference if self.mode in ("reference", "exact") else None
        verdict = self.judge.score(self.case.query, answer, reference=reference, context=shown)
        return verdict.score

    def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        """Score ``coalition`` on trial ``trial``.

        Args:
            coalition: The memories kept in the context.
            trial: The trial index (seeds the sampled answer).

        Returns:
            The judge's score in [0, 1] (both calls cached).
        """
        text = self.answer(coalition, trial)
        key = self._judge_key(text, coalition)
        score = self.cache.judge(key, lambda: self._verdict(text, coalition))
        if self.mode in ("coalition", "full"):
            self._check_consistent(text, score)
        return score

    def _check_consistent(self, answer: str, score: float) -> None:
        with self._lock:
            if score > 0:
                self.accepted.add(normalize_answer(answer))
            accepted = len(self.accepted)
        if accepted > 1:
            raise InconsistentVerdictsError(
                f"the judge accepted {accepted} different answers to one query",
                reason="accepted_two_answers",
            )

    @property
    def agent_calls(self) -> int:
        """Agent calls this method made."""
        return self.meter.agent_calls

    @property
    def judge_calls(self) -> int:
        """Judge calls this method made."""
        return self.meter.judge_calls

    @property
    def model_calls(self) -> int:
        """Agent, judge and rater calls this method made (what a user pays)."""
        return self.meter.model_calls

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens this method used."""
        return self.meter.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        """Completion tokens this method used."""
        return self.meter.completion_tokens
