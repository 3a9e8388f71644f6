"""Run every method on every case: same frozen context, same evaluator, same cost counting.

For each case and method the runner builds a fresh :class:`CountingEvaluator` over the
case's evaluator, times the method, then measures Binary Task Recovery on the context the
method returns with an *uncounted* evaluator (``recovery_trials`` trials, all must pass).
A method that cannot run offline (:class:`MethodNotRunError`) is reported as not run; a
method that fails on a case is recorded and that case leaves the common cohort of every
method (so paired comparisons stay paired), as in the paper's exclusions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .cases import BenchCase
from .counting import CountingEvaluator
from .methods.base import BenchMethod, MethodContext, MethodNotRunError
from .methods.llm_direct import Rater
from .methods.registry import build_method
from .outcomes import CaseOutcome, score_case
from .settings import BenchSettings

__all__ = ["BenchRun", "CaseFailure", "measure_recovery", "run_benchmark"]


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


def measure_recovery(
    case: BenchCase, cleared: Sequence[str], trials: int, threshold: float
) -> bool:
    """Binary Task Recovery: every trial on M minus ``cleared`` scores at least ``threshold``."""
    evaluate = case.evaluator()
    removed = set(cleared)
    kept = tuple(m for m in case.context() if m.id not in removed)
    return all(evaluate(kept, t) >= threshold for t in range(trials))


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
) -> BenchRun:
    """Run ``settings.methods`` (or ``methods``) on ``cases``."""
    started = time.perf_counter()
    chosen = (
        list(methods)
        if methods is not None
        else [build_method(spec, settings, rater=rater) for spec in settings.methods]
    )
    not_run: dict[str, str] = {}
    per_case: dict[str, dict[str, CaseOutcome]] = {m.name: {} for m in chosen}
    failures: list[CaseFailure] = []
    with _progress(len(cases), progress) as bar:
        for case in cases:
            for method in chosen:
                if method.name in not_run:
                    continue
                counter = CountingEvaluator(case.evaluator())
                t0 = time.perf_counter()
                try:
                    output = method.run(
                        MethodContext(case=case, evaluate=counter, settings=settings)
                    )
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
                elapsed = time.perf_counter() - t0
                outcome = score_case(
                    case,
                    output,
                    recovered=measure_recovery(
                        case, output.cleared, settings.recovery_trials, settings.success_threshold
                    ),
                    evaluator_calls=counter.calls,
                    coalitions=counter.coalitions,
                    wall_seconds=elapsed,
                )
                per_case[method.name][case.case_id] = outcome
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
