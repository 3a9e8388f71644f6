"""The judge interface: (question, answer, reference?, context?) -> a verdict in [0, 1].

A judge supplies the success signal of the paper's evaluator (the score the engine averages
into v(S), Eq. 2). Every judge has a sync ``score`` and an async ``ascore``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..core.memory import Memory

__all__ = ["BaseJudge", "Judge", "JudgeVerdict", "ParseMethod"]

ParseMethod = Literal["structured", "json", "label", "word", "number", "rule", "callable"]


class JudgeVerdict(BaseModel):
    """One judgement of one answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    score: float = Field(ge=0.0, le=1.0)
    """The score in [0, 1] handed to the engine."""
    raw: str = ""
    """The judge's raw output (the model reply for LLM judges; empty for rule judges)."""
    parsed_by: ParseMethod
    """How the score was obtained: structured output, JSON in text, a verdict label, the
    one-word verdict call (``judges.protocol``), a bare number, a rule (exact match,
    F1) or a user callable."""
    reason: str | None = None
    """The judge's stated reason, when it gave one."""


@runtime_checkable
class Judge(Protocol):
    """Scores an answer; ``context`` is what the agent was given (its memories)."""

    def score(
        self,
        question: str,
        answer: str,
        *,
        reference: str | None = None,
        context: Sequence[Memory] | None = None,
    ) -> JudgeVerdict:
        """Judge ``answer`` synchronously.

        Args:
            question: The user's question.
            answer: The agent's answer.
            reference: The gold answer, when there is one.
            context: The memories the agent was shown (for reference-free judges).

        Returns:
            The verdict: a score in [0, 1] and how it was read.
        """
        ...

    async def ascore(
        self,
        question: str,
        answer: str,
        *,
        reference: str | None = None,
        context: Sequence[Memory] | None = None,
    ) -> JudgeVerdict:
        """Async twin of :meth:`score`: judge ``answer`` on the event loop."""
        ...


class BaseJudge:
    """Base for judges that need no I/O: ``ascore`` runs ``score`` inline."""

    requires_reference: bool = False
    """Whether ``score`` needs a reference answer."""

    def score(
        self,
        question: str,
        answer: str,
        *,
        reference: str | None = None,
        context: Sequence[Memory] | None = None,
    ) -> JudgeVerdict:
        """Score ``answer`` to ``question`` (as :meth:`Judge.score`)."""
        raise NotImplementedError

    async def ascore(
        self,
        question: str,
        answer: str,
        *,
        reference: str | None = None,
        context: Sequence[Memory] | None = None,
    ) -> JudgeVerdict:
        """Score ``answer`` to ``question`` on the event loop (as :meth:`Judge.score`)."""
        await asyncio.sleep(0)
        return self.score(question, answer, reference=reference, context=context)
