"""MeClearEngine: Algorithm 1 of the paper over a caller-supplied evaluator.

The algorithm is written once, as a generator of steps (evaluate these coalitions, emit
this stage event); a sync and an async driver execute the steps.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Generator, Iterable
from dataclasses import dataclass

import numpy as np

from .clearance import candidate_coalition, harmful_positions, nested_candidates, select_candidate
from .coalitions import Coalition
from .config import ClearanceConfig
from .errors import ConfigurationError
from .estimators import ExactShapley, PermutationShapley, make_estimator
from .evaluation import Evaluator, evaluate_async, evaluate_sync, is_async_evaluator
from .events import Stage, StageEvent, StageListener
from .game import CoalitionGame
from .interactions import (
    exact_interactions,
    interaction_label,
    sampled_interaction_plan,
    sampled_interactions,
)
from .memory import Memory, freeze_context
from .report import (
    ClearanceCandidate,
    ClearanceCost,
    ClearanceReport,
    MemoryAttribution,
    PairInteraction,
)
from .screening import loo_coalitions, loo_effects, loo_label

__all__ = ["MeClearEngine"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Evaluate:
    coalitions: list[Coalition]


@dataclass(frozen=True, slots=True)
class _Emit:
    event: StageEvent


_Step = _Evaluate | _Emit
_Algorithm = Generator[_Step, None, ClearanceReport]


class MeClearEngine:
    """Cooperative attribution and verified clearance of one frozen context (Algorithm 1).

    ``clear`` / ``aclear`` never modify the memories they are given; the report lists what
    to keep for this query only.
    """

    def __init__(
        self, config: ClearanceConfig | None = None, *, listener: StageListener | None = None
    ) -> None:
        self.config = config if config is not None else ClearanceConfig()
        self.listener = listener

    # ------------------------------------------------------------------ drivers
    def clear(self, memories: Iterable[Memory], evaluate: Evaluator) -> ClearanceReport:
        """Run Algorithm 1 synchronously; a coroutine evaluator is run on a private loop."""
        context = freeze_context(memories)
        if is_async_evaluator(evaluate):
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return asyncio.run(self.aclear(context, evaluate))
            raise ConfigurationError(
                "clear() got a coroutine evaluator inside a running event loop: "
                "await aclear() instead"
            )
        game, algorithm = self._start(context)
        failure: BaseException | None = None
        while True:
            try:
                step = algorithm.send(None) if failure is None else algorithm.throw(failure)
            except StopIteration as stop:
                return stop.value
            failure = None
            try:
                if isinstance(step, _Evaluate):
                    evaluate_sync(game, step.coalitions, evaluate, self.config.max_concurrency)
                else:
                    self._emit_sync(step.event)
            except BaseException as exc:
                failure = exc

    async def aclear(self, memories: Iterable[Memory], evaluate: Evaluator) -> ClearanceReport:
        """Run Algorithm 1 on the event loop; coalitions of one stage run concurrently."""
        context = freeze_context(memories)
        game, algorithm = self._start(context)
        failure: BaseException | None = None
        while True:
            try:
                step = algorithm.send(None) if failure is None else algorithm.throw(failure)
            except StopIteration as stop:
                return stop.value
            failure = None
            try:
                if isinstance(step, _Evaluate):
                    await evaluate_async(
                        game, step.coalitions, evaluate, self.config.max_concurrency
                    )
                else:
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
        except Exception:
            logger.exception("MeClear stage listener failed on %s/%s", event.stage, event.phase)

    async def _emit_async(self, event: StageEvent) -> None:
        if self.listener is None:
            return
        try:
            result = self.listener(event)
            if inspect.isawaitable(result):
                await result
        except Exception:
            logger.exception("MeClear stage listener failed on %s/%s", event.stage, event.phase)

    def _start(self, context: tuple[Memory, ...]) -> tuple[CoalitionGame, _Algorithm]:
        game = CoalitionGame(context=context, trials=self.config.trials)
        return game, self._algorithm(game)

    # ------------------------------------------------------------------ algorithm
    def _algorithm(self, game: CoalitionGame) -> _Algorithm:
        cfg = self.config
        started = time.perf_counter()
        k = game.k
        if k == 0:
            return self._empty_report(started)
        if cfg.estimator == "exact" and k > cfg.max_exact_memories:
            raise ConfigurationError(
                f"estimator='exact' enumerates 2^K coalitions; K={k} exceeds "
                f"max_exact_memories={cfg.max_exact_memories}"
            )
        ids = [m.id for m in game.context]
        rng = np.random.default_rng(cfg.seed)

        # Steps 2-4: baseline v(M), LOO effects (Eq. 7) and their kappa labels.
        yield _Emit(StageEvent(stage="screening", phase="start", payload={"k": k}))
        try:
            yield _Evaluate(loo_coalitions(k))
            effects = loo_effects(game)
            labels = [loo_label(d, cfg.loo_tolerance) for d in effects]
        except GeneratorExit:
            raise
        except BaseException as exc:
            yield self._error("screening", exc)
            raise
        baseline = game.value(game.full)
        yield _Emit(
            StageEvent(
                stage="screening",
                phase="end",
                payload={
                    "baseline_value": baseline,
                    "baseline_recovered": game.recovers(game.full, cfg.success_threshold),
                    "loo": {
                        i: {"effect": d, "label": lab}
                        for i, d, lab in zip(ids, effects, labels, strict=True)
                    },
                },
            )
        )

        # Step 5: Shapley contributions (Eq. 3 exact or Eq. 11 sampled) with intervals.
        estimator = make_estimator(cfg, rng)
        yield _Emit(
            StageEvent(stage="attribution", phase="start", payload={"estimator": estimator.name})
        )
        try:
            yield _Evaluate(estimator.plan(k))
            estimate = estimator.estimate(game)
        except GeneratorExit:
            raise
        except BaseException as exc:
            yield self._error("attribution", exc)
            raise
        psi = [float(x) for x in estimate.values]
        priority = harmful_positions(psi, cfg.harm_tolerance)
        ranks = {i: r + 1 for r, i in enumerate(sorted(range(k), key=lambda i: (psi[i], i)))}
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
                },
            )
        )

        # Optional: pairwise interactions (Eq. 15), diagnostic only.
        pairs: list[PairInteraction] = []
        if cfg.interactions and k >= 2:
            yield _Emit(StageEvent(stage="interactions", phase="start", payload={}))
            try:
                if isinstance(estimator, ExactShapley):
                    omegas = exact_interactions(game)
                else:
                    assert isinstance(estimator, PermutationShapley)
                    yield _Evaluate(sampled_interaction_plan(estimator.orders, k))
                    omegas = sampled_interactions(game, estimator.orders)
            except GeneratorExit:
                raise
            except BaseException as exc:
                yield self._error("interactions", exc)
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

        # Steps 6-17: nested candidates (Eq. 16-17), gains and verification (Eq. 18-20).
        candidates = nested_candidates(priority)
        yield _Emit(
            StageEvent(
                stage="clearance",
                phase="start",
                payload={"candidates": [[ids[i] for i in c] for c in candidates]},
            )
        )
        try:
            yield _Evaluate([candidate_coalition(k, c) for c in candidates])
            selected, gains, recovered, admissible = select_candidate(
                game, candidates, cfg.success_threshold
            )
        except GeneratorExit:
            raise
        except BaseException as exc:
            yield self._error("clearance", exc)
            raise
        cleared_positions = set(candidates[selected])
        final_coalition = candidate_coalition(k, candidates[selected])
        report = ClearanceReport(
            baseline_value=baseline,
            final_value=game.value(final_coalition),
            recovered=game.recovers(final_coalition, cfg.success_threshold),
            kept=[m for i, m in enumerate(game.context) if i not in cleared_positions],
            cleared=[m for i, m in enumerate(game.context) if i in cleared_positions],
            attributions=[
                MemoryAttribution(
                    memory_id=ids[i],
                    position=i,
                    loo_effect=effects[i],
                    loo_label=labels[i],
                    shapley=psi[i],
                    shapley_interval=(float(estimate.lower[i]), float(estimate.upper[i])),
                    rank=ranks[i],
                    harmful=i in priority,
                    cleared=i in cleared_positions,
                )
                for i in range(k)
            ],
            interactions=pairs,
            candidates=[
                ClearanceCandidate(
                    size=j,
                    memory_ids=[ids[i] for i in c],
                    value=game.value(candidate_coalition(k, c)),
                    gain=gains[j],
                    recovered=recovered[j],
                    admissible=admissible[j],
                )
                for j, c in enumerate(candidates)
            ],
            cost=self._cost(game, started),
            config=cfg,
        )
        yield _Emit(
            StageEvent(
                stage="clearance",
                phase="end",
                payload={
                    "selected_size": selected,
                    "cleared_ids": report.cleared_ids,
                    "kept_ids": report.kept_ids,
                    "baseline_value": report.baseline_value,
                    "final_value": report.final_value,
                    "recovered": report.recovered,
                    "cost": report.cost.model_dump(),
                },
            )
        )
        return report

    @staticmethod
    def _error(stage: Stage, exc: BaseException) -> _Emit:
        return _Emit(
            StageEvent(
                stage=stage,
                phase="error",
                payload={"error_type": type(exc).__name__, "error": str(exc)[:500]},
            )
        )

    @staticmethod
    def _cost(game: CoalitionGame, started: float) -> ClearanceCost:
        return ClearanceCost(
            coalitions=game.coalitions_evaluated,
            evaluator_calls=game.evaluator_calls,
            cache_hits=game.cache_hits,
            wall_seconds=time.perf_counter() - started,
        )

    def _empty_report(self, started: float) -> ClearanceReport:
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
                wall_seconds=time.perf_counter() - started,
            ),
            config=self.config,
        )
