"""MeClearEngine: Algorithm 1 of the paper over a caller-supplied evaluator.

The algorithm is written once, as a generator of steps (evaluate these coalitions, emit
this stage event); a sync and an async driver execute the steps. Its stages live in
:mod:`.stages`, one module per stage, and read in :meth:`MeClearEngine._algorithm` as
Algorithm 1 does: screening (steps 2-4; with ``stops.unexplained``, a failure no memory
explains stops there), attribution (step 5), interactions (Eq. 15), verified clearance
(steps 6-17), then, when asked, the carriers of the verified harm (``stages.carriers``).

Reliability: every evaluator call is retried on transient errors (``config.failure.retry``) and
counted against the per-query budget (``max_evaluator_calls``, ``max_wall_seconds``).
When the run cannot finish, ``on_failure="open"`` (default) returns a report with
``status="failed"`` that keeps the full context unchanged and says why
(:class:`~.report.ClearanceFailure`); ``"closed"`` raises. Cancellation always propagates,
after every in-flight call of the run was cancelled (async) and the open stage was closed
with an ``error`` event; the run's state is local to the call and discarded.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Algorithm 1 (Appendix C).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeGuard

import numpy as np

from .budget import Clock, RunBudget
from .concurrency.step_driver import Call, Steps, arun_steps, run_steps
from .config import ClearanceConfig
from .errors import ConfigurationError
from .estimators import ExactShapley, make_estimator
from .events import StageEvent, StageListener
from .failures.retry import AsyncSleep, CallRetrier, Sleep
from .game import CoalitionGame
from .grouping import Embedder, memory_graph
from .judging.dispatch import Pace
from .judging.evaluator import (
    Evaluator,
    evaluate_async,
    evaluate_sync,
    is_async_evaluator,
)
from .memory import Memory, freeze_context
from .prior import PriorCandidate, prior_positions
from .progress import RunProgress
from .recency import RecencyPrior
from .redaction import redact
from .report import ClearanceReport, PairInteraction
from .stages import (
    Algorithm,
    Run,
    Step,
    attribution,
    clearance,
    early_exit,
    interactions,
    screening,
)
from .stages import Evaluate as _Evaluate
from .stages.clearing import verifier as verifier
from .stages.outcomes import empty_report, fail_open_report
from .stages.outcomes import inconsistency as inconsistency
from .stages.prior import prior_clearance
from .stages.unexplained import unexplained_stop
from .tracing.hooks import NULL_TRACE, start_trace  # imports no OpenTelemetry
from .tracing.settings import TraceSettings

__all__ = ["MeClearEngine"]

logger = logging.getLogger(__name__)


class MeClearEngine:
    """Cooperative attribution and verified clearance of one frozen context (Algorithm 1).

    ``clear`` / ``aclear`` never modify the memories they are given; the report lists what
    to keep for this query only.

    Args:
        config: the run's settings (default: ``ClearanceConfig()``).
        listener: receives every stage event (a function or a coroutine function).
        sleep: replaces the retry backoff waits (sync path).
        asleep: replaces the retry backoff waits (async path).
        clock: replaces the monotonic clock of the wall-time budget.
        tracing: the OpenTelemetry spans of each run.
        embed: texts -> vectors, deciding which memories hierarchical attribution tests
            together (default: TF-IDF word similarity).
        recency: the recency candidate's settings (``core.recency``; None: the
            configuration's ``recency``, off by default).

    Example:
        >>> from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
        >>> memories = [Memory(id="a", content="Paris"), Memory(id="b", content="Rome")]
        >>> def evaluate(coalition, trial):
        ...     return 0.0 if any(m.id == "b" for m in coalition) else 1.0
        >>> report = MeClearEngine(ClearanceConfig()).clear(memories, evaluate)
        >>> report.cleared_ids, report.kept_ids
        (['b'], ['a'])
    """

    def __init__(
        self,
        config: ClearanceConfig | None = None,
        *,
        listener: StageListener | None = None,
        sleep: Sleep | None = None,
        asleep: AsyncSleep | None = None,
        clock: Clock | None = None,
        tracing: TraceSettings | None = None,
        embed: Embedder | None = None,
        recency: RecencyPrior | None = None,
    ) -> None:
        """Configure the engine; nothing runs until :meth:`clear` or :meth:`aclear`.

        ``sleep`` / ``asleep`` replace the retry backoff waits and ``clock`` the
        monotonic clock of the wall-time budget (inject them so tests never wait).
        ``tracing``: the OpenTelemetry spans of each run (``meclear_integrations.telemetry``;
        default: emitted when the application has a recording tracer provider).
        ``embed``: texts -> vectors (e.g. a LangChain ``Embeddings.embed_documents`` or a
        lookup of the vectors the retriever already holds), called once per hierarchical
        run on the memory texts; similarity decides only which memories are tested
        together. Default: TF-IDF word similarity (``core.grouping``).
        ``recency``: try the older of similar dated memories as one verified candidate
        before attribution (``core.recency``; default: ``config.recency``, off).
        """
        self.config = config if config is not None else ClearanceConfig()
        self.embed = embed
        self.recency = recency if recency is not None else self.config.recency
        self.listener = listener
        self.tracing = tracing
        self.sleep = sleep
        self.asleep = asleep
        self.clock = clock

    # ------------------------------------------------------------------ drivers
    def clear(
        self,
        memories: Iterable[Memory],
        evaluate: Evaluator,
        *,
        prior_harmful: Iterable[str] | PriorCandidate = (),
    ) -> ClearanceReport:
        """Run Algorithm 1 synchronously; a coroutine evaluator is run on a private loop.

        ``prior_harmful``: ids of memories verified harmful before, or a
        :class:`~meclear_integrations.core.prior.PriorCandidate` that also names the
        members to put back (see ``core.prior``); those in this context are verified
        first as one candidate.

        Args:
            memories: the retrieved context M (frozen; never modified).
            evaluate: ``evaluate(coalition, trial) -> score in [0, 1]``, a function or a
                coroutine function.
            prior_harmful: ids of memories verified harmful before, or a prior candidate.

        Returns:
            The report: what to keep for this query, attributions, candidates, cost.

        Raises:
            ConfigurationError: a coroutine evaluator inside a running event loop, or a
                context too large for exact enumeration.
            MeClearError: with ``on_failure="closed"``, the failure that stopped the run.
        """
        context = freeze_context(memories)
        prior = PriorCandidate.of(prior_harmful)
        if is_async_evaluator(evaluate):
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return asyncio.run(self.aclear(context, evaluate, prior_harmful=prior))
            raise ConfigurationError(
                "clear() got a coroutine evaluator inside a running event loop: "
                "await aclear() instead"
            )
        return run_steps(self._running(context, prior, evaluate, Pace()))

    async def aclear(
        self,
        memories: Iterable[Memory],
        evaluate: Evaluator,
        *,
        prior_harmful: Iterable[str] | PriorCandidate = (),
    ) -> ClearanceReport:
        """Async :meth:`clear`: Algorithm 1 on the event loop, one stage's coalitions at once.

        The arguments, report and errors of :meth:`clear` (the same step flow), except that
        a coroutine evaluator is awaited on this loop (no ``ConfigurationError`` for it) and
        a sync one runs in worker threads.
        """
        prior = PriorCandidate.of(prior_harmful)
        return await arun_steps(self._running(freeze_context(memories), prior, evaluate, None))

    def _running(
        self,
        context: tuple[Memory, ...],
        prior: PriorCandidate,
        evaluate: Evaluator,
        pace: Pace | None,
    ) -> Steps[ClearanceReport]:
        """One run for either driver: the algorithm's steps inside its trace.

        ``pace``: the sync batch runner's (None on the event loop).
        """
        with self._session(context, prior, evaluate) as run:
            try:
                result = yield from self._expanded(run, pace)
            except Exception as exc:
                return run.done(exc)
            return run.done(result)

    def _expanded(self, run: _Session, pace: Pace | None) -> Steps[ClearanceReport]:
        """The algorithm, each of its steps replaced by the steps that execute it.

        What an execution raises is thrown into the algorithm, as ``run_steps`` does.
        """
        algorithm = run.algorithm
        value: Any = None
        failure: BaseException | None = None
        while True:
            try:
                step = algorithm.send(value) if failure is None else algorithm.throw(failure)
            except StopIteration as stop:
                result: ClearanceReport = stop.value
                return result
            value, failure = None, None
            try:
                yield from self._executing(run, step, pace)
            except BaseException as exc:
                failure = exc

    def _executing(self, run: _Session, step: Step, pace: Pace | None) -> Steps[None]:
        """One algorithm step: a stage event reported, or a batch of coalitions evaluated."""
        if not isinstance(step, _Evaluate):
            return (yield from self._reporting(run, run.observe(step)))

        def report(event: StageEvent | None) -> None:
            run_steps(self._reporting(run, event))

        def areport(event: StageEvent | None) -> Awaitable[None]:
            return arun_steps(self._reporting(run, event))

        yield Call(
            lambda: evaluate_sync(*run.batch(step), pace=pace, **run.hooks(report)),
            lambda: evaluate_async(*run.batch(step), **run.hooks(areport)),
        )

    def _reporting(self, run: _Session, event: StageEvent | None) -> Steps[None]:
        """A stage event on the trace, then to the listener."""
        if run.traced(event):
            yield from self._emitting(event)

    @contextmanager
    def _session(
        self, context: tuple[Memory, ...], prior: PriorCandidate, evaluate: Evaluator
    ) -> Iterator[_Session]:
        """One run's state for either driver, inside its trace."""
        game, run, algorithm = self._start(context, prior)
        progress = RunProgress(run.started)
        with start_trace(self.tracing, context, self.config) as trace:
            evaluated = trace.evaluator(evaluate)
            listened = self.listener is not None
            yield _Session(game, run, algorithm, progress, trace, evaluated, listened)

    def _emitting(self, event: StageEvent) -> Steps[None]:
        """The stage listener's call as a step flow (either driver).

        What the listener returns to await is one step: awaited on the loop; on the sync
        path a coroutine is closed with a warning. An ``Exception`` it raises is logged
        (redacted), never raised.
        """
        if self.listener is None:
            return
        try:
            result = self.listener(event)
            if inspect.isawaitable(result):
                awaitable = result
                yield Call(partial(_ignored, awaitable), lambda: awaitable)
        except Exception as exc:
            self._listener_failed(event, exc)

    @staticmethod
    def _listener_failed(event: StageEvent, exc: Exception) -> None:
        logger.warning(
            "MeClear stage listener failed on %s/%s: %s",
            event.stage,
            event.phase,
            redact(f"{type(exc).__name__}: {exc}")[:500],
        )

    def _start(
        self, context: tuple[Memory, ...], prior: PriorCandidate | None = None
    ) -> tuple[CoalitionGame, Run, Algorithm]:
        cfg = self.config
        game = CoalitionGame(context=context, trials=cfg.trials)
        budget_kwargs = {"clock": self.clock} if self.clock is not None else {}
        budget = RunBudget(
            max_calls=cfg.budget.max_evaluator_calls,
            max_seconds=cfg.budget.max_wall_seconds,
            **budget_kwargs,
        )
        retrier = CallRetrier(cfg.failure.retry, budget, sleep=self.sleep, asleep=self.asleep)
        run = Run(
            config=cfg,
            game=game,
            budget=budget,
            retrier=retrier,
            embed=self.embed,
            recency=self.recency,
        )
        prior = prior if prior is not None else PriorCandidate()
        positions = prior_positions(context, prior.ids)
        unproven = [i for i in prior_positions(context, prior.unproven) if i in positions]
        run.prior_first = prior.scoped and bool(positions)
        run.prior_settled = frozenset(prior_positions(context, prior.settled))
        run.prior_carriers = frozenset(prior_positions(context, prior.carriers))
        return game, run, self._algorithm(run, positions, unproven)

    # ------------------------------------------------------------------ algorithm
    def _algorithm(self, run: Run, prior: list[int], unproven: list[int]) -> Algorithm:
        """Algorithm 1, stage by stage; the report names the prior candidate tried."""
        report = yield from self._stages(run, prior, unproven)
        if run.recency_tried:
            tried_recency = [run.game.context[i].id for i in run.recency_tried]
            report = report.model_copy(update={"recency_ids": tried_recency})
        if run.recency_ignored:
            report = report.model_copy(update={"recency_ignored": list(run.recency_ignored)})
        if prior:
            tried = [run.game.context[i].id for i in prior]
            report = report.model_copy(update={"prior_ids": tried})
        return report

    def _stages(self, run: Run, prior: list[int], unproven: list[int]) -> Algorithm:
        cfg, game = run.config, run.game
        k = game.k
        if k == 0:
            return empty_report(run)
        rng = np.random.default_rng(cfg.seed)
        estimator = make_estimator(
            cfg, rng, k, similarity=lambda: memory_graph(game.context, run.embed)
        )
        bound = estimator.max_memories if isinstance(estimator, ExactShapley) else None
        if bound is not None and k > bound:
            raise ConfigurationError(
                f"estimator='exact' enumerates 2^K coalitions; K={k} exceeds "
                f"ExactShapley(max_memories={bound})"
            )
        screened = yield from screening(run, estimator, rng, prior, unproven)  # steps 2-4
        if screened.exited:
            return (yield from early_exit(run))
        if screened.unexplained is not None:  # no memory explains the failure
            return (yield from unexplained_stop(run, screened.unexplained))
        if screened.prior is not None:
            return (yield from prior_clearance(run, screened.prior, screened.search))
        attributed = yield from attribution(run, screened.estimator)  # step 5
        pairs: list[PairInteraction] = []
        if cfg.interactions and k >= 2:  # Eq. 15, diagnostic only (the stage skipped when off)
            pairs = yield from interactions(
                run, attributed.estimator, attributed.psi, screened.orders, rng
            )
        return (yield from clearance(run, attributed, pairs))  # steps 6-17


@dataclass(slots=True)
class _Session:
    """What the sync and the async driver of one run share: the run, its trace, progress.

    The algorithm yields evaluation batches (run by the driver's batch runner with
    :meth:`batch`'s arguments and :meth:`hooks`'s progress callbacks) and stage events
    (:meth:`observe`, then :meth:`traced`); :meth:`done` ends the trace with the report,
    or with a fail-open report when the algorithm raised.
    """

    game: CoalitionGame
    run: Run
    algorithm: Algorithm
    progress: RunProgress
    trace: Any
    evaluate: Evaluator
    listened: bool

    @property
    def watched(self) -> bool:
        """Someone reads progress (a listener or a recording trace)."""
        return self.listened or self.trace is not NULL_TRACE

    def batch(self, step: _Evaluate) -> tuple[Any, ...]:
        """The batch runner's arguments before the keyword-only ones."""
        return self.game, step.coalitions, self.evaluate, self.run.config.budget.max_concurrency

    def hooks(self, report: Callable[[StageEvent | None], Any]) -> dict[str, Any]:
        """The batch runner's keyword arguments: retries, failures, progress callbacks."""
        watched = self.watched
        return {
            "retrier": self.run.retrier,
            "failures": self.run.failures,
            "on_start": (lambda n: report(self.progress.start(n))) if watched else None,
            "on_done": (lambda n: report(self.progress.advance(n))) if watched else None,
        }

    def observe(self, step: Any) -> StageEvent:
        """A stage event of the algorithm, seen by the progress count."""
        self.progress.observe(step.event)
        return step.event  # type: ignore[no-any-return]

    def traced(self, event: StageEvent | None) -> TypeGuard[StageEvent]:
        """Record ``event`` on the trace; True when there is an event to emit."""
        if event is None:
            return False
        self.trace.stage(event)
        return True

    def done(self, outcome: ClearanceReport | Exception) -> ClearanceReport:
        """The run's report (a fail-open report for an exception), ending the trace."""
        if isinstance(outcome, Exception):
            outcome = fail_open_report(outcome, self.run)
        return self.trace.done(outcome)  # type: ignore[no-any-return]


def _ignored(awaitable: object) -> None:
    """A stage listener's awaitable on the sync path: a coroutine is closed, with a warning."""
    if inspect.iscoroutine(awaitable):
        awaitable.close()
        logger.warning("async stage listener ignored on the sync path; use aclear()")
