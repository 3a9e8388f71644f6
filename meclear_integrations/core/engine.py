"""MeClearEngine: Algorithm 1 of the paper over a caller-supplied evaluator.

The algorithm is written once, as a generator of steps (evaluate these coalitions, emit
this stage event); a sync and an async driver execute the steps.

Reliability: every evaluator call is retried on transient errors (``config.retry``) and
counted against the per-query budget (``max_evaluator_calls``, ``max_wall_seconds``).
When the run cannot finish, ``on_failure="open"`` (default) returns a report with
``status="failed"`` that keeps the full context unchanged and says why
(:class:`~.report.ClearanceFailure`); ``"closed"`` raises. Cancellation always propagates,
after every in-flight call of the run was cancelled (async) and the open stage was closed
with an ``error`` event; the run's state is local to the call and discarded.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from itertools import combinations
from typing import Literal

import numpy as np

from .budget import Clock, RunBudget
from .clearance import (
    GAIN_TIE_TOLERANCE,
    candidate_coalition,
    fallback_candidates,
    harmful_positions,
    minimal_candidates,
    nested_candidates,
    select_candidate,
)
from .coalitions import Coalition
from .config import ClearanceConfig
from .errors import (
    BudgetExceededError,
    ConfigurationError,
    EstimatorError,
    EvaluatorError,
    InconsistentVerdictsError,
    ScoreOutOfRangeError,
    TooManyMemoriesError,
)
from .escalation import escalation_candidates, escalation_pool, wide_pool
from .estimators import (
    ExactShapley,
    HierarchicalShapley,
    KernelShapley,
    PermutationShapley,
    ShapleyEstimator,
    guarded,
    make_estimator,
)
from .evaluation import (
    Evaluator,
    evaluate_async,
    evaluate_sync,
    is_async_evaluator,
)
from .events import Stage, StageEvent, StageListener
from .failure_kind import failure_kind
from .faults import exception_chain
from .game import CoalitionGame
from .grouping import Embedder, memory_similarity
from .interactions import (
    exact_interactions,
    interaction_label,
    sampled_interaction_plan,
    sampled_interactions,
)
from .memory import Memory, freeze_context
from .prior import PriorCandidate, prior_positions
from .redaction import redact
from .report import (
    CandidateFamily,
    ClearanceCandidate,
    ClearanceCost,
    ClearanceFailure,
    ClearanceReport,
    FailedCoalition,
    FailureReason,
    MemoryAttribution,
    PairInteraction,
)
from .retry import AsyncSleep, CallRetrier, Sleep
from .screening import LooLabel, loo_coalitions, loo_label, measured_loo_effects
from .trace_settings import TraceSettings
from .tracing import start_trace  # imports no OpenTelemetry
from .verification import SequentialVerifier

__all__ = ["MeClearEngine"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Evaluate:
    coalitions: list[tuple[Coalition, int]]
    """(coalition, trials it must have); everything missing goes out as one batch."""


@dataclass(frozen=True, slots=True)
class _Emit:
    event: StageEvent


_Step = _Evaluate | _Emit


@dataclass(frozen=True, slots=True)
class _PriorTry:
    """One prior candidate or put-back test verified: the positions it clears, its
    verdict."""

    cleared: list[int]
    recovered: bool
    admissible: bool


_Algorithm = Generator[_Step, None, ClearanceReport]

_FAILS_OPEN = (EvaluatorError, BudgetExceededError, TooManyMemoriesError, EstimatorError)
"""Errors after which a run can fail open; anything else (a bug, a configuration error,
cancellation) always propagates."""
MAX_FAILURES_IN_EVENT = 20
"""Failed coalitions listed in an error event (the report lists them all)."""


@dataclass(slots=True)
class _Run:
    """Mutable state of one run: budget, retrier, failures, and how far it got."""

    budget: RunBudget
    retrier: CallRetrier
    failures: list[FailedCoalition] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    stage: Stage = "screening"
    estimator: str | None = None
    attributions: list[MemoryAttribution] | None = None
    """Complete contributions, once attribution has finished."""


def _failure_reason(exc: BaseException) -> FailureReason:
    if isinstance(exc, TooManyMemoriesError):
        return "too_many_memories"
    if isinstance(exc, BudgetExceededError):
        return "time_budget" if exc.reason == "time_budget" else "call_budget"
    if isinstance(exc, ScoreOutOfRangeError):
        return "invalid_score"
    if isinstance(exc, EstimatorError):
        return "estimator_error"
    return "evaluator_error"


def _error_text(exc: BaseException) -> str:
    return redact(str(exc))[:500]


def _loo_label(effect: float | None, kappa: float) -> LooLabel | None:
    return None if effect is None else loo_label(effect, kappa)


def inconsistency(exc: BaseException) -> str | None:
    """The reason when ``exc`` (or what it wraps) says the judge's verdicts contradict
    each other (:class:`InconsistentVerdictsError`, also once redacted), else None."""
    for link in exception_chain(exc):
        if isinstance(link, InconsistentVerdictsError):
            return link.reason or "inconsistent_verdicts"
        if getattr(link, "original_type", None) == InconsistentVerdictsError.__name__:
            return "inconsistent_verdicts"
    return None


def verifier(cfg: ClearanceConfig) -> SequentialVerifier:
    """The sequential verification rule of ``cfg``."""
    return SequentialVerifier(
        trials=cfg.trials,
        max_trials=cfg.max_trials,
        success_threshold=cfg.success_threshold,
        recovery_rate=cfg.recovery_rate,
        delta=cfg.verification_delta,
        exit_rate=cfg.exit_rate,
    )


def _want(*groups: tuple[Iterable[Coalition], int]) -> list[tuple[Coalition, int]]:
    """Concatenate (coalitions, trials) groups into one batch (duplicates are cache hits)."""
    batch: list[tuple[Coalition, int]] = []
    for coalitions, trials in groups:
        _merge(batch, coalitions, trials)
    return batch


def _merge(batch: list[tuple[Coalition, int]], coalitions: Iterable[Coalition], t: int) -> None:
    batch.extend((c, t) for c in coalitions)


def _complete_plan(estimator: ShapleyEstimator, k: int) -> bool:
    """The estimator's plan is the whole coalition table (exact Eq. 3 read-outs apply)."""
    if isinstance(estimator, ExactShapley):
        return True
    return isinstance(estimator, KernelShapley) and len(estimator.always) == 1 << k


class MeClearEngine:
    """Cooperative attribution and verified clearance of one frozen context (Algorithm 1).

    ``clear`` / ``aclear`` never modify the memories they are given; the report lists what
    to keep for this query only.
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
    ) -> None:
        """``sleep`` / ``asleep`` replace the retry backoff waits and ``clock`` the
        monotonic clock of the wall-time budget (inject them so tests never wait).
        ``tracing``: the OpenTelemetry spans of each run (``meclear_integrations.telemetry``;
        default: emitted when the application has a recording tracer provider).
        ``embed``: texts -> vectors (e.g. a LangChain ``Embeddings.embed_documents`` or a
        lookup of the vectors the retriever already holds), called once per hierarchical
        run on the memory texts; similarity decides only which memories are tested
        together. Default: TF-IDF word similarity (``core.grouping``)."""
        self.config = config if config is not None else ClearanceConfig()
        self.embed = embed
        self.listener = listener
        self.tracing = tracing
        self.sleep = sleep
        self.asleep = asleep
        self.clock = clock

    def _new_run(self) -> _Run:
        cfg = self.config
        budget_kwargs = {"clock": self.clock} if self.clock is not None else {}
        budget = RunBudget(
            max_calls=cfg.max_evaluator_calls, max_seconds=cfg.max_wall_seconds, **budget_kwargs
        )
        retrier = CallRetrier(cfg.retry, budget, sleep=self.sleep, asleep=self.asleep)
        return _Run(budget=budget, retrier=retrier)

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
        first as one candidate."""
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
        game, run, algorithm = self._start(context, prior)
        with start_trace(self.tracing, context, self.config) as trace:
            evaluate = trace.evaluator(evaluate)
            failure: BaseException | None = None
            while True:
                try:
                    step = algorithm.send(None) if failure is None else algorithm.throw(failure)
                except StopIteration as stop:
                    return trace.done(stop.value)
                except Exception as exc:
                    return trace.done(self._fail_open(exc, game, run))
                failure = None
                try:
                    if isinstance(step, _Evaluate):
                        evaluate_sync(
                            game,
                            step.coalitions,
                            evaluate,
                            self.config.max_concurrency,
                            retrier=run.retrier,
                            failures=run.failures,
                        )
                    else:
                        trace.stage(step.event)
                        self._emit_sync(step.event)
                except BaseException as exc:
                    failure = exc

    async def aclear(
        self,
        memories: Iterable[Memory],
        evaluate: Evaluator,
        *,
        prior_harmful: Iterable[str] | PriorCandidate = (),
    ) -> ClearanceReport:
        """Run Algorithm 1 on the event loop; coalitions of one stage run concurrently.
        ``prior_harmful`` as in :meth:`clear`."""
        context = freeze_context(memories)
        game, run, algorithm = self._start(context, PriorCandidate.of(prior_harmful))
        with start_trace(self.tracing, context, self.config) as trace:
            evaluate = trace.evaluator(evaluate)
            failure: BaseException | None = None
            while True:
                try:
                    step = algorithm.send(None) if failure is None else algorithm.throw(failure)
                except StopIteration as stop:
                    return trace.done(stop.value)
                except Exception as exc:
                    return trace.done(self._fail_open(exc, game, run))
                failure = None
                try:
                    if isinstance(step, _Evaluate):
                        await evaluate_async(
                            game,
                            step.coalitions,
                            evaluate,
                            self.config.max_concurrency,
                            retrier=run.retrier,
                            failures=run.failures,
                        )
                    else:
                        trace.stage(step.event)
                        await self._emit_async(step.event)
                except BaseException as exc:
                    failure = exc

    def _emit_sync(self, event: StageEvent) -> None:
        if self.listener is None:
            return
        try:
            result = self.listener(event)
            if inspect.iscoroutine(result):
                result.close()
                logger.warning("async stage listener ignored on the sync path; use aclear()")
        except Exception as exc:
            self._listener_failed(event, exc)

    async def _emit_async(self, event: StageEvent) -> None:
        if self.listener is None:
            return
        try:
            result = self.listener(event)
            if inspect.isawaitable(result):
                await result
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
    ) -> tuple[CoalitionGame, _Run, _Algorithm]:
        game = CoalitionGame(context=context, trials=self.config.trials)
        run = self._new_run()
        prior = prior if prior is not None else PriorCandidate()
        positions = prior_positions(context, prior.ids)
        unproven = [i for i in prior_positions(context, prior.unproven) if i in positions]
        return game, run, self._algorithm(game, run, positions, unproven)

    # ------------------------------------------------------------------ failures
    def _fails_open(self, exc: BaseException) -> bool:
        """Only failures that retrying can heal fail open (``core.failure_kind``)."""
        return (
            self.config.on_failure == "open"
            and isinstance(exc, _FAILS_OPEN)
            and failure_kind(exc) != "permanent"
        )

    def _fail_open(self, exc: Exception, game: CoalitionGame, run: _Run) -> ClearanceReport:
        """The fail-open report for ``exc`` (the full context, unchanged), or re-raise.
        Inconsistent verdicts are no failure: the run abstains (``unverified``) whatever
        ``on_failure`` says."""
        reason = inconsistency(exc)
        if reason is not None:
            return self._unverified(game, run, reason)
        if not self._fails_open(exc):
            raise exc
        failures = list(run.failures)
        if isinstance(exc, EvaluatorError) and not any(
            tuple(f.memory_ids) == exc.coalition and f.trial == exc.trial for f in failures
        ):
            failures.append(
                FailedCoalition(
                    memory_ids=list(exc.coalition),
                    trial=exc.trial,
                    error_type=type(exc.__cause__ or exc).__name__,
                    error=_error_text(exc.__cause__ or exc),
                    transient=False,
                    attempts=1,
                )
            )
        baseline = game.value(game.full) if game.trials_of(game.full) else None
        failure = ClearanceFailure(
            reason=_failure_reason(exc),
            stage=run.stage,
            error_type=type(exc).__name__,
            error=_error_text(exc),
            failed_coalitions=failures,
            estimates_usable=run.attributions is not None,
            coalitions_evaluated=game.coalitions_evaluated,
        )
        logger.warning(
            "MeClear failed open (%s in %s): %s", failure.reason, failure.stage, failure.error
        )
        return ClearanceReport(
            baseline_value=baseline,
            final_value=baseline,
            recovered=False,
            kept=list(game.context),
            cleared=[],
            attributions=list(run.attributions or []),
            candidates=[],
            cost=self._cost(game, run),
            config=self.config,
            estimator=run.estimator,
            status="failed",
            failure=failure,
        )

    def _unverified(
        self,
        game: CoalitionGame,
        run: _Run,
        reason: str,
        candidates: list[ClearanceCandidate] | None = None,
    ) -> ClearanceReport:
        """The abstaining report: every memory kept, nothing verified, ``status_reason``."""
        baseline = game.value(game.full) if game.trials_of(game.full) else None
        logger.info("MeClear abstained (unverified): %s", reason)
        return ClearanceReport(
            baseline_value=baseline,
            final_value=baseline,
            recovered=False,
            kept=list(game.context),
            cleared=[],
            attributions=list(run.attributions or []),
            candidates=candidates or [],
            cost=self._cost(game, run),
            config=self.config,
            estimator=run.estimator,
            status="unverified",
            status_reason=reason,
        )

    # ------------------------------------------------------------------ algorithm
    def _algorithm(
        self, game: CoalitionGame, run: _Run, prior: list[int], unproven: list[int]
    ) -> _Algorithm:
        report = yield from self._attribute_and_clear(game, run, prior, unproven)
        if prior:
            tried = [game.context[i].id for i in prior]
            report = report.model_copy(update={"prior_ids": tried})
        return report

    def _attribute_and_clear(
        self, game: CoalitionGame, run: _Run, prior: list[int], unproven: list[int]
    ) -> _Algorithm:
        cfg = self.config
        k = game.k
        if k == 0:
            return self._empty_report(run)
        if cfg.estimator == "exact" and k > cfg.max_exact_memories:
            raise ConfigurationError(
                f"estimator='exact' enumerates 2^K coalitions; K={k} exceeds "
                f"max_exact_memories={cfg.max_exact_memories}"
            )
        ids = [m.id for m in game.context]
        rng = np.random.default_rng(cfg.seed)
        everything = game.full
        # Trials per coalition (see ClearanceConfig.adaptive_trials): the baseline and the
        # verified candidates get T; every other coalition gets `single`.
        single = 1 if cfg.adaptive_trials else cfg.trials
        estimator = make_estimator(
            cfg, rng, k, similarity=lambda: memory_similarity(game.context, self.embed)
        )
        memory_loo = getattr(estimator, "memory_loo", True)
        interaction_orders: list[np.ndarray] = []

        # Steps 2-4: baseline v(M), LOO effects (Eq. 7) and their kappa labels. With
        # early_exit the baseline goes first alone; with one_batch the attribution (and
        # interaction) coalitions join the LOO batch.
        yield _Emit(StageEvent(stage="screening", phase="start", payload={"k": k}))
        exited = False
        shortcut: list[_PriorTry] | None = None
        try:
            if k > cfg.max_memories:
                raise TooManyMemoriesError(
                    f"the context holds K={k} memories, more than max_memories="
                    f"{cfg.max_memories}; raise max_memories or retrieve fewer"
                )
            if cfg.early_exit:
                exited = yield from self._exit_test(game)
            if prior and not exited:  # the prior candidate, verified before attribution
                shortcut = yield from self._prior_search(game, prior, unproven)
            if not exited and shortcut is None:
                estimator = self._noise_aware(estimator, game)
                memory_loo = getattr(estimator, "memory_loo", True)
                loo = loo_coalitions(k)[1:] if memory_loo else []
                batch = _want(([everything], cfg.trials), (loo, single))
                if cfg.one_batch:
                    _merge(batch, guarded(estimator, estimator.plan, k), single)
                    if (
                        cfg.interactions
                        and k >= 2
                        and not _complete_plan(estimator, k)
                        and memory_loo
                    ):
                        interaction_orders = self._interaction_orders(estimator, rng, k)
                        _merge(batch, sampled_interaction_plan(interaction_orders, k), single)
                yield _Evaluate(batch)
                effects = measured_loo_effects(game)
        except GeneratorExit:
            raise
        except BaseException as exc:
            yield self._error("screening", exc, run)
            raise
        baseline = game.value(everything)
        if exited:
            return (yield from self._early_exit(game, baseline, run))
        if shortcut is not None:
            return (yield from self._prior_clearance(game, shortcut, run))
        yield _Emit(
            StageEvent(
                stage="screening",
                phase="end",
                payload={
                    "baseline_value": baseline,
                    "baseline_recovered": game.recovers(everything, cfg.success_threshold),
                    "early_exit": False,
                    "loo": {
                        i: {"effect": d, "label": _loo_label(d, cfg.loo_tolerance)}
                        for i, d in zip(ids, effects, strict=True)
                        if d is not None
                    },
                },
            )
        )

        # Step 5: Shapley contributions (Eq. 3 exact, Eq. 11 sampled, or KernelSHAP).
        run.stage = "attribution"
        run.estimator = estimator.name
        yield _Emit(
            StageEvent(stage="attribution", phase="start", payload={"estimator": estimator.name})
        )
        try:
            if not cfg.one_batch:
                yield _Evaluate(_want((guarded(estimator, estimator.plan, k), single)))
            more = guarded(estimator, estimator.extend, game)
            while more:  # adaptive stopping: further rounds until the estimator is settled
                yield _Evaluate(_want((more, single)))
                more = guarded(estimator, estimator.extend, game)
            estimate = guarded(estimator, estimator.estimate, game)
        except GeneratorExit:
            raise
        except BaseException as exc:
            yield self._error("attribution", exc, run)
            raise
        psi = [float(x) for x in estimate.values]
        sampled = bool(np.any(estimate.lower < estimate.upper))
        use_interval = cfg.harm_rule == "interval" or (
            cfg.harm_rule == "auto" and estimator.name == "kernel"
        )
        upper = [float(x) for x in estimate.upper] if use_interval else None
        priority = harmful_positions(psi, cfg.harm_tolerance, upper)
        # Below -tau but with an interval that still reaches zero: not flagged, but tried
        # as fallback clearance candidates after those inside H^ (interval rule only).
        fallback = (
            [i for i in harmful_positions(psi, cfg.harm_tolerance) if i not in priority]
            if upper is not None
            else []
        )
        ranks = {i: r + 1 for r, i in enumerate(sorted(range(k), key=lambda i: (psi[i], i)))}
        effects = measured_loo_effects(game)  # attribution may have measured more of them
        run.attributions = [
            MemoryAttribution(
                memory_id=ids[i],
                position=i,
                loo_effect=effects[i],
                loo_label=_loo_label(effects[i], cfg.loo_tolerance),
                shapley=psi[i],
                shapley_interval=(float(estimate.lower[i]), float(estimate.upper[i])),
                rank=ranks[i],
                harmful=i in priority,
                cleared=False,
            )
            for i in range(k)
        ]
        yield _Emit(
            StageEvent(
                stage="attribution",
                phase="end",
                payload={
                    "shapley": {
                        i: {"value": v, "interval": [float(lo), float(hi)], "rank": ranks[p]}
                        for p, (i, v, lo, hi) in enumerate(
                            zip(ids, psi, estimate.lower, estimate.upper, strict=True)
                        )
                    },
                    "harmful_ids": [ids[i] for i in priority],
                    "coalitions": game.coalitions_evaluated,
                    **self._hierarchy_payload(estimator, ids),
                },
            )
        )

        # Optional: pairwise interactions (Eq. 15), diagnostic only.
        pairs: list[PairInteraction] = []
        if cfg.interactions and k >= 2:
            run.stage = "interactions"
            yield _Emit(StageEvent(stage="interactions", phase="start", payload={}))
            try:
                if isinstance(estimator, HierarchicalShapley):
                    omegas = self._reduced_interactions(estimator)
                elif _complete_plan(estimator, k):
                    omegas = exact_interactions(game)
                else:
                    if not interaction_orders:
                        interaction_orders = self._interaction_orders(estimator, rng, k)
                    plan = sampled_interaction_plan(interaction_orders, k)
                    yield _Evaluate(_want((plan, single)))
                    omegas = sampled_interactions(game, interaction_orders)
            except GeneratorExit:
                raise
            except BaseException as exc:
                yield self._error("interactions", exc, run)
                raise
            pairs = [
                PairInteraction(
                    memory_ids=(ids[i], ids[j]),
                    omega=w,
                    label=interaction_label(w, psi[i], psi[j], cfg.harm_tolerance),
                )
                for (i, j), w in omegas.items()
            ]
            yield _Emit(
                StageEvent(
                    stage="interactions",
                    phase="end",
                    payload={
                        "pairs": [
                            {"ids": list(p.memory_ids), "omega": p.omega, "label": p.label}
                            for p in pairs
                        ]
                    },
                )
            )

        # Steps 6-17: candidates (nested Eq. 16-17, or every subset of H^ for Eq. 5),
        # gains and verification (Eq. 18-20).
        run.stage = "clearance"
        search = self._search(game, priority)
        candidates = (
            minimal_candidates(priority, psi)
            if search == "minimal"
            else nested_candidates(priority)
        ) + fallback_candidates(priority, fallback)
        yield _Emit(
            StageEvent(
                stage="clearance",
                phase="start",
                payload={
                    "candidates": [[ids[i] for i in c] for c in candidates],
                    "search": search,
                    "fallback_ids": [ids[i] for i in fallback],
                },
            )
        )
        families = self._families(candidates, search, len(candidates) - len(fallback))
        try:
            candidates, families = yield from self._verify_staged(game, candidates, families)
            selected, gains, recovered, admissible, undecided = self._select(game, candidates)
            if (
                selected == 0
                and not undecided
                and cfg.escalation
                and not game.recovers(everything, cfg.success_threshold)
            ):
                extra = yield from self._escalate(game, estimator, psi, sampled, candidates)
                if extra:
                    candidates = candidates + extra
                    families += ["escalation"] * len(extra)
                    selected, gains, recovered, admissible, undecided = self._select(
                        game, candidates
                    )
        except GeneratorExit:
            raise
        except BaseException as exc:
            yield self._error("clearance", exc, run)
            raise
        baseline = game.value(game.full)  # the verification may have added trials
        tried = [
            ClearanceCandidate(
                size=len(c),
                memory_ids=[ids[i] for i in c],
                value=game.value(candidate_coalition(k, c)),
                gain=gains[j],
                recovered=recovered[j],
                admissible=admissible[j],
                trials=game.trials_of(candidate_coalition(k, c)),
                family=families[j],
            )
            for j, c in enumerate(candidates)
        ]
        if undecided:
            reason = "inconsistent_trials"
            yield _Emit(
                StageEvent(
                    stage="clearance",
                    phase="end",
                    payload={
                        "status": "unverified",
                        "status_reason": reason,
                        "detail": "trials of a better-looking candidate kept disagreeing "
                        f"after {cfg.max_trials} trials; the context is returned unchanged",
                        "cleared_ids": [],
                        "kept_ids": ids,
                        "baseline_value": baseline,
                        "cost": self._cost(game, run).model_dump(),
                    },
                )
            )
            return self._unverified(game, run, reason, tried)
        cleared_positions = set(candidates[selected])
        final_coalition = candidate_coalition(k, candidates[selected])
        final_recovered = (
            recovered[selected]
            if cfg.verification == "sequential"
            else game.recovers(final_coalition, cfg.success_threshold)
        )
        report = ClearanceReport(
            baseline_value=baseline,
            final_value=game.value(final_coalition),
            recovered=final_recovered,
            kept=[m for i, m in enumerate(game.context) if i not in cleared_positions],
            cleared=[m for i, m in enumerate(game.context) if i in cleared_positions],
            attributions=[
                a.model_copy(
                    update={
                        "cleared": a.position in cleared_positions,
                        # a fallback memory the verified clearance removed joins H^
                        "harmful": a.harmful or a.position in cleared_positions,
                    }
                )
                for a in run.attributions
            ],
            interactions=pairs,
            candidates=tried,
            cost=self._cost(game, run),
            config=cfg,
            estimator=estimator.name,
            clearance_search=search,
        )
        yield self._clearance_end(selected, report)
        return report

    def _verify_staged(
        self, game: CoalitionGame, candidates: list[list[int]], families: list[CandidateFamily]
    ) -> Generator[_Step, None, tuple[list[list[int]], list[CandidateFamily]]]:
        """Verify the candidates (Eq. 18-19); the fallback family only when it can matter.

        Under the sequential rule in a quiet run (every context's trials agree), once a
        nested/minimal candidate is admissible at the maximum value 1, no fallback
        candidate (a superset, later in Eq. 20's order) can be selected, so the fallback
        family is neither verified nor reported: it would only tie and cost trials. In a
        noisy run, or under the paper's rule, the whole family is verified as before."""
        cfg = self.config
        k = game.k
        core = sum(1 for f in families if f != "fallback")
        if cfg.verification != "sequential" or core == len(candidates):
            yield from self._verify(game, [candidate_coalition(k, c) for c in candidates])
            return candidates, families
        yield from self._verify(game, [candidate_coalition(k, c) for c in candidates[:core]])
        selected = self._select(game, candidates[:core])[0]
        best = candidate_coalition(k, candidates[selected])
        if (
            selected > 0
            and not SequentialVerifier.noisy(game)
            and game.value(best) >= 1.0 - GAIN_TIE_TOLERANCE
        ):
            return candidates[:core], families[:core]
        yield from self._verify(game, [candidate_coalition(k, c) for c in candidates])
        return candidates, families

    @staticmethod
    def _noise_aware(estimator: ShapleyEstimator, game: CoalitionGame) -> ShapleyEstimator:
        """Hierarchical screening decides on single trials; when the baseline's trials
        already disagree (a sampled agent or a noisy judge) and the context is small
        enough for its flat fallback, attribute flat instead: KernelSHAP averages the
        noise over many coalitions."""
        if (
            isinstance(estimator, HierarchicalShapley)
            and estimator.fallback is not None
            and SequentialVerifier.noisy(game)
        ):
            return estimator.fallback
        return estimator

    def _select(
        self, game: CoalitionGame, candidates: list[list[int]]
    ) -> tuple[int, list[float], list[bool], list[bool], bool]:
        """Eq. 20 under the run's verification rule: (selected, gains, recovered,
        admissible, undecided)."""
        cfg = self.config
        if cfg.verification == "sequential":
            coalitions = [candidate_coalition(game.k, c) for c in candidates]
            selection = verifier(cfg).select(game, coalitions)
            return (
                selection.selected,
                selection.gains,
                selection.recovered,
                selection.admissible,
                selection.undecided,
            )
        selected, gains, recovered, admissible = select_candidate(
            game, candidates, cfg.success_threshold
        )
        return selected, gains, recovered, admissible, False

    @staticmethod
    def _families(candidates: list[list[int]], search: str, standard: int) -> list[CandidateFamily]:
        """The family of each candidate: the searched family, then the fallback ones."""
        main: CandidateFamily = "minimal" if search == "minimal" else "nested"
        return [main if j < standard else "fallback" for j in range(len(candidates))]

    def _escalate(
        self,
        game: CoalitionGame,
        estimator: ShapleyEstimator,
        psi: list[float],
        sampled: bool,
        tried: list[list[int]],
    ) -> Generator[_Step, None, list[list[int]]]:
        """Escalation (``core.escalation``): the search's new candidates verified one by
        one under the run's rule, smallest first, up to the first admissible one (so a
        larger candidate never ties with it); empty when the search finds nothing."""
        cfg = self.config
        suspects = getattr(estimator, "suspects", ())
        pools = [escalation_pool(psi, cfg.escalation_pool, suspects)]
        if sampled:  # a sampled estimate may put a harmful memory at or above zero
            pools.append(wide_pool(psi, 2 * cfg.escalation_pool, suspects, cfg.harm_tolerance))
        search = escalation_candidates(game, pools, cfg.success_threshold)
        try:
            batch = next(search)
            while True:
                yield _Evaluate(batch)
                batch = search.send(None)
        except StopIteration as done:
            found: list[list[int]] = done.value or []
        seen = {tuple(sorted(c)) for c in tried}
        # never an empty context: an answer from no memories says nothing about them
        found = [c for c in found if tuple(sorted(c)) not in seen and len(c) < game.k]
        verified: list[list[int]] = []
        for candidate in found:  # smallest first; the first that verifies ends the search
            coalition = candidate_coalition(game.k, candidate)
            yield from self._verify(game, [game.full, coalition])
            verified.append(candidate)
            if self._select(game, [[], candidate])[0] == 1:
                break
        return verified

    def _verify(
        self, game: CoalitionGame, coalitions: list[Coalition]
    ) -> Generator[_Step, None, None]:
        """Evaluate the candidates M minus C_j for Eq. 18-19.

        Under ``verification="sequential"`` the trials are what
        :meth:`SequentialVerifier.plan` asks for, round by round. Under the paper's rule,
        without adaptive trials every candidate gets T trials in one batch. With adaptive
        trials, candidates not yet in the table get all T trials at once (the decision is
        made on them, and a later round would cost a model round-trip), while those that
        attribution already evaluated once get the remaining T - 1 trials only if that
        trial passed the recovery threshold (otherwise they cannot be admissible). The
        first such candidate (in the order of Eq. 20's tie-break) gets them in the same
        batch as the new candidates: it is the one Eq. 20 needs next unless a new
        candidate before it recovers at 1.0, and evaluating it there saves a round-trip
        for at most T - 1 extra calls. Then the next open candidate (first trial passed,
        fewer than T trials) gets its trials alone and, unless it recovers at the maximum
        possible value 1.0, the remaining open ones go in one further batch. A candidate
        after one that already recovers at 1.0 can never be selected (Eq. 20 breaks ties
        by the smaller index), so it gets no further trials; Eq. 20's choice is unchanged
        by any of this.
        """
        cfg = self.config
        if cfg.verification == "sequential":
            rule = verifier(cfg)
            while plan := rule.plan(game, coalitions):
                yield _Evaluate(plan)
            return None
        if not cfg.adaptive_trials:
            yield _Evaluate(_want((coalitions, cfg.trials)))
            return None
        threshold = cfg.success_threshold
        fresh = [c for c in coalitions if game.trials_of(c) == 0]
        known = [
            c
            for c in coalitions[1:]
            if 0 < game.trials_of(c) < cfg.trials and game.recovers(c, threshold)
        ]
        yield _Evaluate(_want((fresh + known[:1], cfg.trials), (coalitions, 1)))

        def settled_best(c: Coalition) -> bool:
            return (
                game.trials_of(c) >= cfg.trials
                and game.recovers(c, threshold)
                and game.value(c) >= 1.0 - GAIN_TIE_TOLERANCE
            )

        open_ = []
        for c in coalitions[1:]:
            if settled_best(c):
                break  # nothing after it can be selected
            if game.trials_of(c) < cfg.trials and game.recovers(c, threshold):
                open_.append(c)
        if not open_:
            return None
        first = open_[0]
        yield _Evaluate([(first, cfg.trials)])
        if settled_best(first):
            return None
        yield _Evaluate(_want((open_[1:], cfg.trials)))
        return None

    def _search(self, game: CoalitionGame, priority: list[int]) -> Literal["nested", "minimal"]:
        """The candidate family: ``config.clearance`` with ``"auto"`` resolved."""
        cfg = self.config
        if cfg.clearance == "nested" or len(priority) > cfg.max_exact_memories:
            return "nested"
        if cfg.clearance == "minimal":
            return "minimal"
        k = game.k
        for size in range(2, len(priority) + 1):  # sizes 0 and 1 are the baseline and LOO
            for cleared in combinations(priority, size):
                if game.trials_of(candidate_coalition(k, cleared)) == 0:
                    return "nested"
        return "minimal"

    @staticmethod
    def _hierarchy_payload(estimator: ShapleyEstimator, ids: list[str]) -> dict[str, object]:
        """What hierarchical attribution did, with memory ids (empty for other estimators)."""
        if not isinstance(estimator, HierarchicalShapley):
            return {}
        info = estimator.describe()
        blocks = info.pop("blocks")
        suspects = info.pop("suspects")
        return {
            "hierarchy": {
                **info,
                "blocks": [[ids[i] for i in b] for b in blocks],  # type: ignore[attr-defined]
                "suspect_ids": [ids[i] for i in suspects],  # type: ignore[attr-defined]
            }
        }

    @staticmethod
    def _reduced_interactions(estimator: HierarchicalShapley) -> dict[tuple[int, int], float]:
        """Eq. 15 exactly on the reduced game, for pairs of screened memories (the memories
        not singled out are null players up to the screening, so their pairs are 0 and
        omitted)."""
        reduced = estimator.reduced
        if reduced is None or not estimator.reduced_exact:
            return {}
        single = {
            j: p.bit_length() - 1 for j, p in enumerate(reduced.players) if p.bit_count() == 1
        }
        return {
            (single[a], single[b]): omega
            for (a, b), omega in exact_interactions(reduced).items()  # type: ignore[arg-type]
            if a in single and b in single
        }

    @staticmethod
    def _interaction_orders(
        estimator: ShapleyEstimator, rng: np.random.Generator, k: int
    ) -> list[np.ndarray]:
        orders = getattr(estimator, "orders", None)
        if isinstance(estimator, PermutationShapley) and orders:
            return list(orders)
        permutations = getattr(estimator, "budget", 0) // max(1, k) or 16
        return [rng.permutation(k) for _ in range(permutations)]

    def _exit_test(self, game: CoalitionGame) -> Generator[_Step, None, bool]:
        """Evaluate the full context alone; True when no clearance can gain (Eq. 20 would
        select C_0): it recovers and scores the maximum (the sequential rule: verifiably
        recovers, and no candidate could show a gain over it)."""
        cfg = self.config
        everything = game.full
        if cfg.verification == "sequential":
            rule = verifier(cfg)
            while plan := rule.exit_plan(game):
                yield _Evaluate(plan)
            return rule.exits(game)
        yield _Evaluate([(everything, cfg.trials)])
        return (
            game.recovers(everything, cfg.success_threshold)
            and game.value(everything) >= 1.0 - GAIN_TIE_TOLERANCE
        )

    def _prior_search(
        self, game: CoalitionGame, prior: list[int], unproven: list[int]
    ) -> Generator[_Step, None, list[_PriorTry] | None]:
        """Verify the prior candidate, then test each unproven member by putting it back
        (``core.prior``): the candidate first, then one test per member; None when the
        candidate itself is not admissible."""
        tried = [_PriorTry(list(prior), *(yield from self._prior_verify(game, prior)))]
        if not tried[0].admissible:
            return None
        if len(prior) < 2:
            return tried  # a single member's own contribution is the candidate's verdict
        for u in unproven:
            rest = [i for i in prior if i != u]
            tried.append(_PriorTry(rest, *(yield from self._prior_verify(game, rest, True))))
        if len(tried) > 1 and not (yield from self._prior_verify(game, prior))[1]:
            return None  # the tests' trials of M overturned the candidate's gain
        return tried

    def _prior_verify(
        self, game: CoalitionGame, cleared: list[int], trials_first: bool = False
    ) -> Generator[_Step, None, tuple[bool, bool]]:
        """Verify M minus ``cleared`` against M (Eq. 18-19) under the run's rule:
        (recovered, admissible). ``trials_first``: T trials before the rule's first ask
        (a put-back that fails is settled there; one that passes goes on to the rule's
        recovery test)."""
        cfg = self.config
        everything = game.full
        coalition = candidate_coalition(game.k, cleared)
        if cfg.verification == "sequential":
            rule = verifier(cfg)
            if trials_first and game.trials_of(coalition) < cfg.trials:
                yield _Evaluate([(coalition, cfg.trials)])
            while plan := rule.plan(game, [everything, coalition]):
                yield _Evaluate(plan)
            selection = rule.select(game, [everything, coalition])
            return selection.recovered[1], selection.selected == 1
        yield _Evaluate(_want(([everything, coalition], cfg.trials)))
        _, _, recovered, admissible = select_candidate(game, [[], cleared], cfg.success_threshold)
        return recovered[1], admissible[1]

    def _prior_clearance(
        self, game: CoalitionGame, tried: list[_PriorTry], run: _Run
    ) -> _Algorithm:
        """The prior candidate verified (Eq. 18-19) is the clearance; no attribution. Its
        put-back tests follow it in ``candidates``."""
        cfg = self.config
        ids = [m.id for m in game.context]
        baseline = game.value(game.full)
        union = tried[0].cleared
        yield _Emit(
            StageEvent(
                stage="screening",
                phase="end",
                payload={
                    "baseline_value": baseline,
                    "baseline_recovered": False,
                    "early_exit": False,
                    "prior_ids": [ids[i] for i in union],
                    "loo": {},
                },
            )
        )
        yield _Emit(
            StageEvent(
                stage="clearance",
                phase="start",
                payload={
                    "candidates": [[]] + [[ids[i] for i in t.cleared] for t in tried],
                    "search": "prior",
                },
            )
        )
        cleared = set(union)
        candidates = [
            ClearanceCandidate(
                size=0,
                memory_ids=[],
                value=baseline,
                gain=0.0,
                recovered=False,
                admissible=True,
                trials=game.trials_of(game.full),
                family="nested",
            )
        ]
        for t in tried:
            coalition = candidate_coalition(game.k, t.cleared)
            value = game.value(coalition)
            candidates.append(
                ClearanceCandidate(
                    size=len(t.cleared),
                    memory_ids=[ids[i] for i in t.cleared],
                    value=value,
                    gain=value - baseline,
                    recovered=t.recovered,
                    admissible=t.admissible,
                    trials=game.trials_of(coalition),
                    family="prior",
                )
            )
        report = ClearanceReport(
            baseline_value=baseline,
            final_value=candidates[1].value,
            recovered=True,
            kept=[m for i, m in enumerate(game.context) if i not in cleared],
            cleared=[m for i, m in enumerate(game.context) if i in cleared],
            attributions=[],
            candidates=candidates,
            cost=self._cost(game, run),
            config=cfg,
            clearance_search="prior",
        )
        yield self._clearance_end(1, report)
        return report

    def _early_exit(self, game: CoalitionGame, baseline: float, run: _Run) -> _Algorithm:
        """The full context recovers: no clearance can gain (Eq. 18-20 select C_0)."""
        cfg = self.config
        yield _Emit(
            StageEvent(
                stage="screening",
                phase="end",
                payload={
                    "baseline_value": baseline,
                    "baseline_recovered": True,
                    "early_exit": True,
                    "loo": {},
                },
            )
        )
        yield _Emit(
            StageEvent(
                stage="clearance",
                phase="start",
                payload={"candidates": [[]], "search": "nested"},
            )
        )
        report = ClearanceReport(
            baseline_value=baseline,
            final_value=baseline,
            recovered=True,
            kept=list(game.context),
            cleared=[],
            attributions=[],
            candidates=[
                ClearanceCandidate(
                    size=0,
                    memory_ids=[],
                    value=baseline,
                    gain=0.0,
                    recovered=True,
                    admissible=True,
                    trials=game.trials_of(game.full),
                    family="nested",
                )
            ],
            cost=self._cost(game, run),
            config=cfg,
            early_exit=True,
        )
        yield self._clearance_end(0, report)
        return report

    @staticmethod
    def _clearance_end(selected: int, report: ClearanceReport) -> _Emit:
        return _Emit(
            StageEvent(
                stage="clearance",
                phase="end",
                payload={
                    "selected_size": len(report.cleared),
                    "selected_index": selected,
                    "cleared_ids": report.cleared_ids,
                    "kept_ids": report.kept_ids,
                    "baseline_value": report.baseline_value,
                    "final_value": report.final_value,
                    "recovered": report.recovered,
                    "early_exit": report.early_exit,
                    "escalation_ids": [
                        c.memory_ids for c in report.candidates if c.family == "escalation"
                    ],
                    "cost": report.cost.model_dump(),
                },
            )
        )

    def _error(self, stage: Stage, exc: BaseException, run: _Run) -> _Emit:
        """The ``error`` event closing ``stage``: what failed (redacted), and whether the
        run fails open (``outcome``), raises, or was cancelled."""
        payload: dict[str, object] = {"error_type": type(exc).__name__, "error": _error_text(exc)}
        reason = inconsistency(exc)
        if not isinstance(exc, Exception):
            payload["outcome"] = "cancelled"
        elif reason is not None:
            payload["outcome"] = "unverified"
            payload["status_reason"] = reason
        elif self._fails_open(exc):
            payload["outcome"] = "fail_open"
            payload["reason"] = _failure_reason(exc)
            payload["estimates_usable"] = run.attributions is not None
        else:
            payload["outcome"] = "raise"
        if run.failures:
            payload["failed_coalitions"] = [
                {"memory_ids": f.memory_ids, "trial": f.trial, "error_type": f.error_type}
                for f in run.failures[:MAX_FAILURES_IN_EVENT]
            ]
            payload["failed_count"] = len(run.failures)
        return _Emit(StageEvent(stage=stage, phase="error", payload=payload))

    @staticmethod
    def _cost(game: CoalitionGame, run: _Run) -> ClearanceCost:
        return ClearanceCost(
            coalitions=game.coalitions_evaluated,
            evaluator_calls=game.evaluator_calls,
            cache_hits=game.cache_hits,
            wall_seconds=time.perf_counter() - run.started,
            rounds=game.rounds,
            attempts=run.budget.calls,
            retries=run.budget.retries,
        )

    def _empty_report(self, run: _Run) -> ClearanceReport:
        return ClearanceReport(
            baseline_value=None,
            final_value=None,
            recovered=False,
            kept=[],
            cleared=[],
            attributions=[],
            candidates=[],
            cost=ClearanceCost(
                coalitions=0,
                evaluator_calls=0,
                cache_hits=0,
                wall_seconds=time.perf_counter() - run.started,
            ),
            config=self.config,
        )
