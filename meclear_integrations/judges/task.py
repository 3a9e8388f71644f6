"""Compose the engine's evaluator from a task agent and a judge.

``evaluate(coalition, trial)`` (the paper's one-trial utility, averaged by the engine into
v^(S), Eq. 2) = the judge's score of the agent's answer to ``question`` given only the
coalition's memories. The answer function receives the coalition (memories in retrieval
order) and returns the answer text; it may be a plain or a coroutine function.

What the judge sees (``judge_context``): by default the **whole frozen retrieved context**
(``"full"``), whatever coalition the agent was shown. A judge that only saw the coalition
(``"coalition"``, opt-in) scores an answer against the memories it was shown, so deleting
the evidence against an answer makes that answer "supported": without a reference that
success signal rewards harm. With the full context the judge's input does not depend on
the coalition, so each distinct (normalised) answer is judged once per query.

Deduplication (per query, single-flight: concurrent requests wait for the first call):

- the judge is asked once per distinct normalised answer (``judge_once=True``; with
  ``judge_context="coalition"`` once per answer and coalition);
- with ``deterministic_agent=True`` the agent answers each coalition once across trials
  (a temperature-0 model gives the same answer to the same prompt); otherwise once per
  (coalition, trial). Either way a retried evaluator call reuses the agent's answer when
  only the judge failed (an unreadable verdict retries the judge only).

Shared limits (``limiter=``, a :class:`~meclear_integrations.runtime.limiter.CallLimiter`): the
agent call and the judge call each hold one slot of the limiter while they run, never one
while waiting for the other (a sync agent awaited from the async evaluator holds its slot
in the worker thread that runs it). The slot waits count in ``calls.limiter``.

Consistency (``abstain_on_conflict=True``): when the judge accepts two answers to the
question within one query that say different things, the verdicts cannot all be right, so
the evaluator raises :class:`~meclear_integrations.core.errors.InconsistentVerdictsError`
(reason ``accepted_two_answers``) and the engine abstains: ``status="unverified"``, the
context unchanged. Answers are compared by meaning (:mod:`.equivalence`): dates, numbers
and units are normalised first (``12/2023`` = ``December 2023``, ``3 km`` = ``3000 m``),
then a pair that still differs, and does not deny one another, is put to the judge once
(the reference prompt and its nonce protocol: does one state the same as the other?). So a
memory that only changes an answer's surface form cannot switch clearance off, while
"Paris" and "not Paris", or two different dates, still abstain.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 2 (the evaluator v(S)).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..core.answers import note_answer
from ..core.concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..core.concurrency.workers import check_call_allowed, in_worker
from ..core.errors import ConfigurationError, InconsistentVerdictsError
from ..core.failures.kind import mark_role
from ..core.judging.dispatch import SingleFlightCache
from ..core.memory import Memory
from ..core.redaction import redact
from ..core.tracing.hooks import judge_call
from ..runtime.limiter import (
    CallLimiter,
    WaitTally,
    alimited,
    limited,
    limiter_summary,
    limiting,
)
from ..runtime.usage import model_role
from .base import Judge, JudgeVerdict
from .equivalence import (
    canonical_answer,
    contradicts,
    equivalence_judge,
    is_no_answer,
    normalize_answer,
)

__all__ = [
    "ACCEPTED",
    "AnswerFunction",
    "AsyncTaskEvaluator",
    "TaskCalls",
    "TaskEvaluator",
    "TaskRecord",
    "answers_agree",
    "task_evaluator",
]

AnswerFunction = Callable[[tuple[Memory, ...]], str | Awaitable[str]]
JudgeContext = Literal["coalition", "full"]
ACCEPTED = 0.5
"""A verdict scoring at least this accepts the answer (for the consistency check)."""


NEGATIONS = frozenset(
    (  # noqa: SIM905 - a word list reads best as one string
        "not no never none nobody nothing nowhere neither nor without cannot cant dont "
        "doesnt didnt isnt arent wasnt werent wont wouldnt hasnt havent hadnt shouldnt couldnt"
    ).split()
)
"""Words (normalised, apostrophes dropped) that turn a statement into its denial."""


def answers_agree(first: str, second: str) -> bool:
    """Whether two answers state the same thing.

    They do when equal once normalised by meaning (dates, numbers and units in one form:
    :func:`~.equivalence.canonical_answer`), or when the words of one are all among the
    other's ("December 2023" and "John was in Italy in December 2023"), unless the longer
    one's extra words hold a negation ("Paris" and "not Paris" disagree): a judge that
    accepts an answer and its denial is inconsistent, whatever the word overlap.

    Args:
        first: One answer.
        second: The other answer.

    Returns:
        True when they agree.

    Example:
        >>> from meclear_integrations.judges.task import answers_agree
        >>> answers_agree("December 2023", "John was in Italy in December 2023.")
        True
        >>> answers_agree("Paris", "Not Paris.")
        False
        >>> answers_agree("12/2023", "in December 2023")
        True
    """
    a, b = canonical_answer(first), canonical_answer(second)
    if a == b:
        return True
    words_a, words_b = set(a.split()), set(b.split())
    if not (words_a and words_b):
        return False
    fewer, more = sorted((words_a, words_b), key=len)
    return fewer <= more and not (more - fewer) & NEGATIONS


@dataclass(frozen=True)
class TaskCalls:
    """Agent and judge invocations of one query, made and answered from the caches.

    Made calls are cache misses, failed ones included.
    """

    agent_calls: int
    agent_hits: int
    judge_calls: int
    judge_hits: int
    limiter: dict[str, Any] | None = None
    """The limiter's bound and peak and this query's waits for it (None: no limiter)."""

    @property
    def calls(self) -> int:
        """Agent plus judge invocations actually made."""
        return self.agent_calls + self.judge_calls


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
    agent_cached: bool = False
    """The answer came from the per-query cache (no agent call)."""
    judge_cached: bool = False
    """The verdict came from the per-query cache (no judge call)."""


def _is_async(fn: Callable[..., object]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    )


def _judge_context(
    judge_context: JudgeContext | None, context: Sequence[Memory] | None, reference: str | None
) -> JudgeContext:
    if judge_context == "full" and context is None:
        raise ConfigurationError("judge_context='full' needs the full retrieved context=...")
    if judge_context is not None:
        return judge_context
    if context is not None:
        return "full"
    if reference is not None:
        return "coalition"  # a reference anchors the verdict; there is no full context
    raise ConfigurationError(
        "without a reference the judge must see the whole retrieved context: pass "
        "context=<every retrieved memory> (or judge_context='coalition' to opt into a judge "
        "that only sees the coalition, whose verdicts deleting evidence can satisfy)"
    )


class _TaskBase:
    def __init__(
        self,
        answer: AnswerFunction,
        judge: Judge,
        *,
        question: str,
        reference: str | None = None,
        judge_context: JudgeContext | None = None,
        context: Sequence[Memory] | None = None,
        deterministic_agent: bool = False,
        judge_once: bool = True,
        abstain_on_conflict: bool = True,
        limiter: CallLimiter | None = None,
    ) -> None:
        if getattr(judge, "requires_reference", False) and reference is None:
            from .errors import MissingReferenceError

            raise MissingReferenceError(
                f"{type(judge).__name__} needs a reference answer for this query"
            )
        self.judge_context = _judge_context(judge_context, context, reference)
        self.answer = answer
        self.judge = judge
        self.question = question
        self.reference = reference
        self.context = tuple(context) if context is not None else None
        self.deterministic_agent = deterministic_agent
        self.judge_once = judge_once
        self.abstain_on_conflict = abstain_on_conflict
        self.limiter = limiter
        self.waits = WaitTally()
        """What this query's model calls waited for the limiter."""
        self.records: list[TaskRecord] = []
        """Every run, in completion order."""
        self.conflict: tuple[str, str] | None = None
        """The first two different answers the judge accepted, if any."""
        self._answers: SingleFlightCache[str] = SingleFlightCache()
        self._verdicts: SingleFlightCache[JudgeVerdict] = SingleFlightCache()
        self._same: SingleFlightCache[bool] = SingleFlightCache()
        self._equivalence = equivalence_judge(judge) if abstain_on_conflict else None
        self._accepted: list[str] = []
        self._lock = threading.Lock()

    @property
    def calls(self) -> TaskCalls:
        """Agent and judge invocations so far (made and answered from the caches)."""
        return TaskCalls(
            agent_calls=self._answers.calls,
            agent_hits=self._answers.hits,
            judge_calls=self._verdicts.calls + self._same.calls,
            judge_hits=self._verdicts.hits + self._same.hits,
            limiter=None if self.limiter is None else limiter_summary(self.limiter, self.waits),
        )

    def _shown(self, coalition: tuple[Memory, ...]) -> tuple[Memory, ...]:
        return self.context if self.judge_context == "full" and self.context else coalition

    def _answer_key(self, coalition: tuple[Memory, ...], trial: int) -> Hashable:
        ids = tuple(m.id for m in coalition)
        return ids if self.deterministic_agent else (ids, trial)

    def _judge_key(self, coalition: tuple[Memory, ...], answer: str, trial: int) -> Hashable:
        norm = normalize_answer(answer)
        if not self.judge_once:
            return (norm, tuple(m.id for m in coalition), trial)
        if self.judge_context == "full":
            return norm
        return (norm, tuple(m.id for m in coalition))

    def _disagreeing(self, answer: str, verdict: JudgeVerdict) -> str | None:
        """An accepted answer ``answer`` disagrees with by normalisation, if any.

        Records ``answer`` as accepted when it agrees with every earlier one.
        """
        if not self.abstain_on_conflict or verdict.score < ACCEPTED:
            return None
        with self._lock:
            other = next((a for a in self._accepted if not answers_agree(a, answer)), None)
            if other is None and not any(
                normalize_answer(a) == normalize_answer(answer) for a in self._accepted
            ):
                self._accepted.append(answer)
        return other

    def _same_key(self, other: str, answer: str) -> Hashable:
        return (canonical_answer(other), canonical_answer(answer))

    def _askable(self, other: str, answer: str) -> bool:
        return self._equivalence is not None and not contradicts(other, answer, NEGATIONS)

    def _sameness(self, other: str, answer: str) -> Steps[bool]:
        """Whether the judge says ``answer`` says what ``other`` says (one judge call)."""
        check_call_allowed()
        equivalence: Judge = self._equivalence  # type: ignore[assignment]  # _askable
        held = yield from limiting(self.limiter, self.waits)
        with held, _role("judge"):
            verdict: JudgeVerdict = yield Call(
                partial(equivalence.score, self.question, answer, reference=other),
                partial(equivalence.ascore, self.question, answer, reference=other),
            )
        return verdict.score >= ACCEPTED

    def _settle(self, other: str, answer: str, same: bool) -> None:
        """Accept ``answer`` as saying what ``other`` says, or raise the conflict."""
        if same:
            return
        with self._lock:
            if self.conflict is None:
                self.conflict = (other, answer)
        raise InconsistentVerdictsError(
            redact(
                f"the judge accepted two different answers to one question: "
                f"{other[:200]!r} and {answer[:200]!r}"
            ),
            reason=(
                "judge_accepts_no_answer"
                if is_no_answer(other) or is_no_answer(answer)
                else "accepted_two_answers"
            ),
        )

    def _record(
        self,
        coalition: tuple[Memory, ...],
        trial: int,
        answer: str,
        verdict: JudgeVerdict,
        *,
        agent_cached: bool,
        judge_cached: bool,
    ) -> TaskRecord:
        record = TaskRecord(
            memory_ids=tuple(m.id for m in coalition),
            trial=trial,
            answer=answer,
            verdict=verdict,
            agent_cached=agent_cached,
            judge_cached=judge_cached,
        )
        with self._lock:
            self.records.append(record)
        return record

    def _steps(self, coalition: tuple[Memory, ...], trial: int) -> Steps[TaskRecord]:
        """One agent run and its judgement, written once for both evaluators.

        Each model call is a :class:`~meclear_integrations.core.concurrency.step_driver.Call` with a
        sync and an async twin; :class:`TaskEvaluator` drives the flow with ``run_steps``,
        :class:`AsyncTaskEvaluator` with ``arun_steps``.
        """
        made = self._answers.calls
        key = self._answer_key(coalition, trial)
        answer: str = yield Call(
            lambda: self._answers.get(key, lambda: self._call_agent(coalition)),
            lambda: self._answers.aget(key, lambda: self._acall_agent(coalition)),
        )
        agent_cached = self._answers.calls == made
        judged = self._verdicts.calls
        seen = self._judge_key(coalition, answer, trial)
        verdict: JudgeVerdict = yield Call(
            lambda: self._verdicts.get(seen, lambda: run_steps(self._judging(coalition, answer))),
            lambda: self._verdicts.aget(seen, lambda: arun_steps(self._judging(coalition, answer))),
        )
        record = self._record(
            coalition,
            trial,
            answer,
            verdict,
            agent_cached=agent_cached,
            judge_cached=self._verdicts.calls == judged,
        )
        note_answer(answer, same=answers_agree)  # for the engine (core.answers)
        other = self._disagreeing(answer, verdict)
        if other is not None:  # the judge has now accepted two answers that disagree
            same = False
            if self._askable(other, answer):
                pair = self._same_key(other, answer)
                same = yield Call(
                    lambda: self._same.get(pair, lambda: run_steps(self._sameness(other, answer))),
                    lambda: self._same.aget(
                        pair, lambda: arun_steps(self._sameness(other, answer))
                    ),
                )
            self._settle(other, answer, same)
        return record

    def _call_agent(self, coalition: tuple[Memory, ...]) -> str:
        """The agent's answer on the calling thread (an async agent on a private loop)."""
        check_call_allowed()  # no model call after the run's deadline
        with limited(self.limiter, self.waits), _role("agent"):
            if _is_async(self.answer):
                return _text(asyncio.run(self.answer(coalition)))  # type: ignore[arg-type]
            return _text(self.answer(coalition))

    async def _acall_agent(self, coalition: tuple[Memory, ...]) -> str:
        """The agent's answer on the event loop (a sync agent in a daemon worker thread)."""
        check_call_allowed()  # no model call after the run's deadline
        with _role("agent"):
            if _is_async(self.answer):
                async with alimited(self.limiter, self.waits):
                    return _text(await self.answer(coalition))  # type: ignore[misc]
            # the slot is held in the worker, for as long as the call really runs
            return _text(await in_worker(self._limited_answer, coalition))

    def _limited_answer(self, coalition: tuple[Memory, ...]) -> str | Awaitable[str]:
        with limited(self.limiter, self.waits):
            return self.answer(coalition)

    def _judging(self, coalition: tuple[Memory, ...], answer: str) -> Steps[JudgeVerdict]:
        """The judge's verdict on ``answer`` (one judge call, its slot held around it)."""
        check_call_allowed()
        held = yield from limiting(self.limiter, self.waits)
        with (
            held,
            _role("judge"),
            judge_call(self.judge, self.question, answer, reference=self.reference) as call,
        ):
            judge, question, reference = self.judge, self.question, self.reference
            shown = self._shown(coalition)
            verdict: JudgeVerdict = yield Call(
                partial(judge.score, question, answer, reference=reference, context=shown),
                partial(judge.ascore, question, answer, reference=reference, context=shown),
            )
            call.verdict(verdict)
        return verdict


@contextmanager
def _role(role: Literal["agent", "judge"]) -> Iterator[None]:
    """Model calls inside the block are the ``role``'s (``usage.model_role``).

    An exception raised inside the block is marked with the role.
    """
    try:
        with model_role(role):
            yield
    except Exception as exc:
        mark_role(exc, role)
        raise


_OPEN_TAG, _CLOSE_TAG = "<answer>", "</answer>"


def _text(answer: object) -> str:
    """The agent's answer, without an ``<answer>`` tag a small model echoes.

    The answer prompt fences its data in tags and ends with ``Answer:``; a small model
    (SmolLM2-135M, measured) continues the pattern with ``<answer>`` and a newline: the tag (and a
    closing ``</answer>``) is not part of the answer.
    """
    if not isinstance(answer, str):
        raise TypeError(f"the answer function must return text, got {type(answer).__name__}")
    body = answer.strip()
    if body[: len(_OPEN_TAG)].lower() != _OPEN_TAG:
        return answer
    body = body[len(_OPEN_TAG) :]
    if body[-len(_CLOSE_TAG) :].lower() == _CLOSE_TAG:
        body = body[: -len(_CLOSE_TAG)]
    return body.strip()


class TaskEvaluator(_TaskBase):
    """Sync evaluator; an async answer function is run on a private event loop per call."""

    def run(self, coalition: tuple[Memory, ...], trial: int) -> TaskRecord:
        """One agent run and its judgement (also appended to ``records``).

        Args:
            coalition: The memories the agent sees.
            trial: The trial index.

        Returns:
            The answer, the verdict and the coalition.
        """
        return run_steps(self._steps(coalition, trial))

    def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        """Score ``coalition`` in ``trial``: the evaluator ``v(S)`` of Eq. 2.

        Args:
            coalition: The memories the agent sees.
            trial: The trial index.

        Returns:
            The judge's score in [0, 1].
        """
        return self.run(coalition, trial).verdict.score


class AsyncTaskEvaluator(_TaskBase):
    """Coroutine evaluator; a sync answer function runs in a daemon worker thread."""

    async def arun(self, coalition: tuple[Memory, ...], trial: int) -> TaskRecord:
        """One agent run and its judgement (also appended to ``records``).

        Args:
            coalition: The memories the agent sees.
            trial: The trial index.

        Returns:
            The answer, the verdict and the coalition.
        """
        return await arun_steps(self._steps(coalition, trial))

    async def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        """Score ``coalition`` in ``trial``: the evaluator ``v(S)`` of Eq. 2.

        Args:
            coalition: The memories the agent sees.
            trial: The trial index.

        Returns:
            The judge's score in [0, 1].
        """
        return (await self.arun(coalition, trial)).verdict.score


def task_evaluator(
    answer: AnswerFunction,
    judge: Judge,
    *,
    question: str,
    reference: str | None = None,
    asynchronous: bool | None = None,
    judge_context: JudgeContext | None = None,
    context: Sequence[Memory] | None = None,
    deterministic_agent: bool = False,
    judge_once: bool = True,
    abstain_on_conflict: bool = True,
    limiter: CallLimiter | None = None,
) -> TaskEvaluator | AsyncTaskEvaluator:
    """The engine's ``evaluate(coalition, trial)`` for one query (module docstring).

    ``asynchronous=None`` follows the answer function (coroutine function -> async
    evaluator, for ``aclear``). ``judge_context=None`` shows the judge the full retrieved
    ``context`` when it is given; without it, a query with a reference judges against the
    coalition (the reference anchors the verdict) and one without raises ``ConfigurationError``.
    A judge that requires a reference raises ``MissingReferenceError`` here when none is given.

    Args:
        answer: The task agent: coalition -> answer text (sync or coroutine function).
        judge: The judge of each answer.
        question: The query.
        reference: The gold answer, when there is one.
        asynchronous: Force the async (True) or sync (False) evaluator.
        judge_context: ``"full"``, ``"coalition"``, or None (see above).
        context: The full retrieved context.
        deterministic_agent: Ask the agent once per coalition across trials.
        judge_once: Judge each distinct normalised answer once per query (once per answer
            and coalition with ``judge_context="coalition"``).
        abstain_on_conflict: Raise ``InconsistentVerdictsError`` when the judge accepts two
            different answers to the query.
        limiter: Bounds the model calls in flight: the agent call and the judge call each
            hold one of its slots while they run (``meclear_integrations.runtime.limiter``).

    Returns:
        A :class:`TaskEvaluator` or an :class:`AsyncTaskEvaluator`.

    Raises:
        MissingReferenceError: The judge requires a reference and none is given.
        ConfigurationError: The judge would see neither a reference nor the full context,
            or ``judge_context="full"`` without ``context``.

    Example:
        >>> from meclear_integrations.core import Memory
        >>> from meclear_integrations.judges import ExactMatchJudge, task_evaluator
        >>> memory = Memory(id="m1", content="John was in Italy in December 2023.")
        >>> evaluate = task_evaluator(
        ...     lambda coalition: "December 2023" if coalition else "I don't know",
        ...     ExactMatchJudge(),
        ...     question="Which month was John in Italy?",
        ...     reference="December 2023",
        ... )
        >>> evaluate((memory,), 0), evaluate((), 0)
        (1.0, 0.0)
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
        deterministic_agent=deterministic_agent,
        judge_once=judge_once,
        abstain_on_conflict=abstain_on_conflict,
        limiter=limiter,
    )
