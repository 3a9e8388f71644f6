"""Run every method on every case: same frozen context, same evaluator, same cost counting.

For each case and method the runner builds a fresh simulated query (agent and judge under
the run's judge signal, model calls deduplicated as a user's cache would,
:class:`~meclear_integrations.simulation.SimulatedQuery`) behind a fresh
:class:`CountingEvaluator`, times the method, then measures the returned context on
trials no method saw (:func:`~.measure.measure_context`), uncounted. A method that cannot
run offline (:class:`MethodNotRunError`) is reported as not run; a method that fails on a
case is recorded and that case leaves the common cohort of every method (so paired
comparisons stay paired), as in the paper's exclusions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..core.errors import InconsistentVerdictsError
from ..simulation import SimulatedQuery
from .cases import BenchCase
from .counting import CountingEvaluator
from .measure import measure_context
from .methods.base import BenchMethod, MethodContext, MethodNotRunError, MethodOutput
from .methods.llm_direct import Rater
from .methods.registry import build_method
from .outcomes import CaseCost, CaseOutcome, score_case
from .settings import BenchSettings, case_world

__all__ = ["BenchRun", "CaseFailure", "abstained", "run_benchmark", "run_case"]


class CaseFailure(BaseModel):
    """A method that raised on a case."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    method: str
    error: str


class BenchRun(BaseModel):
    """Outcomes of a benchmark run on its common cohort."""

    settings: BenchSettings
    """The run's settings."""
    outcomes: dict[str, list[CaseOutcome]]
    """Method -> one outcome per cohort case, in case order."""
    not_run: dict[str, str] = Field(default_factory=dict)
    """Method -> why it did not run (e.g. needs a real chat model)."""
    failures: list[CaseFailure] = Field(default_factory=list)
    """Method errors; their cases are excluded from every method's cohort."""
    wall_seconds: float = 0.0
    """Wall time of the whole run."""


def abstained(reason: str) -> MethodOutput:
    """The output of a method whose judge contradicted itself: nothing flagged or deleted."""
    return MethodOutput(
        scores={}, ranking=[], flagged=[], cleared=[], status="unverified", status_reason=reason
    )


def _verified(counter: CountingEvaluator, kept: Sequence[str], threshold: float) -> bool | None:
    scores = counter.trial_scores(kept)
    return all(s >= threshold for s in scores) if scores else None


def run_case(
    case: BenchCase,
    method: BenchMethod,
    settings: BenchSettings,
    *,
    matched_coalitions: int | None = None,
) -> CaseOutcome:
    """One method on one case, scored; raises what the method raises."""
    world = case_world(case.world, settings)
    ids = [m.id for m in case.memories]
    query = SimulatedQuery(
        world, case.reference, case_id=case.case_id, context_ids=ids, signal=settings.judge
    )
    counter = CountingEvaluator(query)
    t0 = time.perf_counter()
    try:
        output = method.run(
            MethodContext(
                case=case,
                evaluate=counter,
                settings=settings,
                matched_coalitions=matched_coalitions,
            )
        )
    except InconsistentVerdictsError as exc:
        output = abstained(exc.reason)
    elapsed = time.perf_counter() - t0
    removed = set(output.cleared)
    kept = [mid for mid in ids if mid not in removed]
    quality = measure_context(
        world, case.reference, kept, case_id=case.case_id, trials=settings.recovery_trials
    )
    cost = CaseCost(
        model_calls=query.model_calls,
        agent_calls=query.agent_calls,
        judge_calls=query.judge_calls,
        evaluator_calls=counter.calls,
        coalitions=counter.coalitions,
        wall_seconds=elapsed,
    )
    return score_case(
        case,
        output,
        quality=quality,
        accuracy_none=world.correct_probability(ids, case.reference, case_id=case.case_id),
        cost=cost,
        verified_recovery=_verified(counter, kept, settings.success_threshold),
    )


def _reference(methods: Sequence[BenchMethod], settings: BenchSettings) -> BenchMethod | None:
    """The method whose per-case coalitions the ablation baselines are matched to."""
    wanted = settings.reference_method
    for method in methods:
        if wanted is not None and method.name == wanted:
            return method
        if wanted is None and method.name.split(":")[0] == "meclear":
            return method
    return None


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:
        return nullcontext(None)
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is in the bench extra
        return nullcontext(None)
    return tqdm(total=total, desc="bench", unit="case")


def run_benchmark(
    cases: Sequence[BenchCase],
    settings: BenchSettings,
    *,
    rater: Rater | None = None,
    methods: Sequence[BenchMethod] | None = None,
    progress: bool = False,
    on_outcome: Callable[[str, CaseOutcome], None] | None = None,
    matched: dict[str, int] | None = None,
) -> BenchRun:
    """Run ``settings.methods`` (or ``methods``) on ``cases``. ``matched``: case id ->
    distinct coalitions to match the ablation baselines' budgets to (by default the
    reference method's, measured in this run)."""
    started = time.perf_counter()
    chosen = (
        list(methods)
        if methods is not None
        else [build_method(spec, settings, rater=rater) for spec in settings.methods]
    )
    not_run: dict[str, str] = {}
    per_case: dict[str, dict[str, CaseOutcome]] = {m.name: {} for m in chosen}
    failures: list[CaseFailure] = []
    reference = _reference(chosen, settings)
    order = sorted(chosen, key=lambda m: m is not reference)  # the reference runs first
    with _progress(len(cases), progress) as bar:
        for case in cases:
            budget: int | None = None if matched is None else matched.get(case.case_id)
            for method in order:
                if method.name in not_run:
                    continue
                try:
                    outcome = run_case(case, method, settings, matched_coalitions=budget)
                except MethodNotRunError as exc:
                    not_run[method.name] = str(exc)
                    continue
                except Exception as exc:
                    failures.append(
                        CaseFailure(
                            case_id=case.case_id,
                            method=method.name,
                            error=f"{type(exc).__name__}: {exc}"[:500],
                        )
                    )
                    continue
                per_case[method.name][case.case_id] = outcome
                if method is reference and matched is None:
                    budget = outcome.coalitions
                if on_outcome is not None:
                    on_outcome(method.name, outcome)
            if bar is not None:
                bar.update(1)
    failed = {f.case_id for f in failures}
    cohort = [c.case_id for c in cases if c.case_id not in failed]
    outcomes = {
        m.name: [per_case[m.name][cid] for cid in cohort] for m in chosen if m.name not in not_run
    }
    return BenchRun(
        settings=settings,
        outcomes=outcomes,
        not_run=not_run,
        failures=failures,
        wall_seconds=time.perf_counter() - started,
    )
