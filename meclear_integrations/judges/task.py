"""Compose the engine's evaluator from a task agent and a judge.

``evaluate(coalition, trial)`` (the paper's one-trial utility, averaged by the engine into
v^(S), Eq. 2) = the judge's score of the agent's answer to ``question`` given only the
coalition's memories. The answer function receives the coalition (memories in retrieval
order) and returns the answer text; it may be a plain or a coroutine function.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..core.failure_kind import Role, mark_role
from ..core.memory import Memory
from ..core.tracing import judge_call
from ..core.workers import check_call_allowed, in_worker
from .base import Judge, JudgeVerdict

__all__ = [
    "AnswerFunction",
    "AsyncTaskEvaluator",
    "TaskEvaluator",
    "TaskRecord",
    "task_evaluator",
]

AnswerFunction = Callable[[tuple[Memory, ...]], str | Awaitable[str]]
JudgeContext = Literal["coalition", "full"]


class TaskRecord(BaseModel):
    """One agent run and its judgement, as seen by the evaluator."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_ids: tuple[str, ...]
    """The coalition the agent was given, in retrieval order."""
    trial: int
    """Trial index t in 0..T-1."""
    answer: str
    """The agent's answer."""
    verdict: JudgeVerdict
    """The judge's verdict."""


def _is_async(fn: Callable[..., object]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    )


class _TaskBase:
    def __init__(
        self,
        answer: AnswerFunction,
        judge: Judge,
        *,
        question: str,
        reference: str | None = None,
        judge_context: JudgeContext = "coalition",
        context: Sequence[Memory] | None = None,
    ) -> None:
        if judge_context == "full" and context is None:
            raise ValueError("judge_context='full' needs the full retrieved context=...")
        if getattr(judge, "requires_reference", False) and reference is None:
            from .errors import MissingReferenceError

            raise MissingReferenceError(
                f"{type(judge).__name__} needs a reference answer for this query"
            )
        self.answer = answer
        self.judge = judge
        self.question = question
        self.reference = reference
        self.judge_context = judge_context
        self.context = tuple(context) if context is not None else None
        self.records: list[TaskRecord] = []
        """Every run, in completion order."""
        self._lock = threading.Lock()

    def _shown(self, coalition: tuple[Memory, ...]) -> tuple[Memory, ...]:
        return self.context if self.judge_context == "full" and self.context else coalition

    def _record(
        self, coalition: tuple[Memory, ...], trial: int, answer: str, verdict: JudgeVerdict
    ) -> TaskRecord:
        record = TaskRecord(
            memory_ids=tuple(m.id for m in coalition), trial=trial, answer=answer, verdict=verdict
        )
        with self._lock:
            self.records.append(record)
        return record


@contextmanager
def _role(role: Role) -> Iterator[None]:
    """Mark an exception raised inside the block with the call that raised it."""
    try:
        yield
    except Exception as exc:
        mark_role(exc, role)
        raise


def _text(answer: object) -> str:
    if not isinstance(answer, str):
        raise TypeError(f"the answer function must return text, got {type(answer).__name__}")
    return answer


class TaskEvaluator(_TaskBase):
    """Sync evaluator; an async answer function is run on a private event loop per call."""

    def run(self, coalition: tuple[Memory, ...], trial: int) -> TaskRecord:
        """One agent run and its judgement (also appended to ``records``)."""
        check_call_allowed()  # no model call after the run's deadline
        with _role("agent"):
            if _is_async(self.answer):
                answer = _text(asyncio.run(self.answer(coalition)))  # type: ignore[arg-type]
            else:
                answer = _text(self.answer(coalition))
        check_call_allowed()
        with (
            _role("judge"),
            judge_call(self.judge, self.question, answer, reference=self.reference) as call,
        ):
            verdict = self.judge.score(
                self.question, answer, reference=self.reference, context=self._shown(coalition)
            )
            call.verdict(verdict)
        return self._record(coalition, trial, answer, verdict)

    def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        return self.run(coalition, trial).verdict.score


class AsyncTaskEvaluator(_TaskBase):
    """Coroutine evaluator; a sync answer function runs in a daemon worker thread."""

    async def arun(self, coalition: tuple[Memory, ...], trial: int) -> TaskRecord:
        """One agent run and its judgement (also appended to ``records``)."""
        check_call_allowed()  # no model call after the run's deadline
        with _role("agent"):
            if _is_async(self.answer):
                answer = _text(await self.answer(coalition))  # type: ignore[misc]
            else:
                answer = _text(await in_worker(self.answer, coalition))
        check_call_allowed()
        with (
            _role("judge"),
            judge_call(self.judge, self.question, answer, reference=self.reference) as call,
        ):
            verdict = await self.judge.ascore(
                self.question, answer, reference=self.reference, context=self._shown(coalition)
            )
            call.verdict(verdict)
        return self._record(coalition, trial, answer, verdict)

    async def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        return (await self.arun(coalition, trial)).verdict.score


def task_evaluator(
    answer: AnswerFunction,
    judge: Judge,
    *,
    question: str,
    reference: str | None = None,
    asynchronous: bool | None = None,
    judge_context: JudgeContext = "coalition",
    context: Sequence[Memory] | None = None,
) -> TaskEvaluator | AsyncTaskEvaluator:
    """The engine's ``evaluate(coalition, trial)`` for one query.

    ``asynchronous=None`` follows the answer function (coroutine function -> async
    evaluator, for ``aclear``). ``judge_context`` chooses what the judge sees as context:
    the coalition the agent was given (default) or the full retrieved ``context``.
    A judge that requires a reference raises ``MissingReferenceError`` here when none is given.
    """
    use_async = _is_async(answer) if asynchronous is None else asynchronous
    cls = AsyncTaskEvaluator if use_async else TaskEvaluator
    return cls(
        answer,
        judge,
        question=question,
        reference=reference,
        judge_context=judge_context,
        context=context,
    )
