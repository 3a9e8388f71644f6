"""Run every method on every case: same frozen context, same evaluator, same cost counting.

For each case and method the runner asks the run's backend (:mod:`.backend`) for a fresh
evaluator: by default a simulated query (agent and judge under the run's judge signal,
model calls deduplicated as a user's cache would,
:class:`~meclear_integrations.simulation.SimulatedQuery`), or real chat models
(:class:`~.real_backend.RealModelBackend`). It wraps the evaluator in a fresh
:class:`CountingEvaluator`, times the method, then measures the returned context on trials
no method saw (:meth:`~.backend.CaseBackend.measure`), uncounted. A method that cannot run
(:class:`MethodNotRunError`) is reported as not run. A failure of the reference method
(MeClear) on a case is the case's failure: that case leaves the common cohort of every
method (so paired comparisons stay paired), as in the paper's exclusions. A failure of
another method on a case the reference finished is that method's failure: its row is
excluded (reported as failed, with the reason) and every other method keeps its cases
(:func:`assemble_run`).

Long runs: cases may run on ``workers`` threads; outcomes already computed
(``completed``, e.g. from a resumed run's journal) are reused, not recomputed; a
:class:`~.stopping.RunStopped` raised by a model call (budget spent, provider refusing)
stops the run cleanly: no new case starts, every finished outcome is kept, and the run is
labelled ``stopped``. The cohort is the cases every method finished.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from meclear_integrations.core.errors import InconsistentVerdictsError

from .backend import SIMULATED, CaseBackend
from .cases import BenchCase
from .counting import CountingEvaluator
from .methods.base import BenchMethod, MethodContext, MethodNotRunError, MethodOutput
from .methods.llm_direct import Rater
from .methods.llm_filter import Keeper
from .methods.registry import build_method
from .outcomes import CaseCost, CaseOutcome, score_case
from .settings import BenchSettings
from .stopping import RunStopped, stop_cause

__all__ = [
    "BenchRun",
    "CaseFailure",
    "abstained",
    "assemble_run",
    "run_benchmark",
    "run_case",
]


class CaseFailure(BaseModel):
    """A method that raised on a case."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    """The case."""
    method: str
    """The method that raised."""
    error: str
    """The error's type and message (at most 500 characters)."""


class BenchRun(BaseModel):
    """Outcomes of a benchmark run on its common cohort."""

    settings: BenchSettings
    """The run's settings."""
    outcomes: dict[str, list[CaseOutcome]]
    """Method -> one outcome per cohort case, in case order."""
    not_run: dict[str, str] = Field(default_factory=dict)
    """Method -> why it did not run (e.g. needs a real chat model)."""
    failures: list[CaseFailure] = Field(default_factory=list)
    """Method errors (the reference's exclude their cases from every method's cohort)."""
    failed: dict[str, str] = Field(default_factory=dict)
    """Method -> why its row is excluded (it failed on cases the reference finished)."""
    wall_seconds: float = 0.0
    """Wall time of the whole run."""
    stopped: str | None = None
    """Why the run stopped before every case was done (None: it finished)."""
    stopped_fatal: bool = False
    """The stop was an error to fix (a provider refusing every call), not a budget."""
    incomplete: list[str] = Field(default_factory=list)
    """Cases left out of the cohort because some method did not finish them (stopped)."""


def abstained(reason: str) -> MethodOutput:
    """The output of a method whose judge contradicted itself: nothing flagged or deleted.

    Args:
        reason: Why the judge's verdicts were inconsistent.

    Returns:
        The output.
    """
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
    backend: CaseBackend = SIMULATED,
    *,
    matched_coalitions: int | None = None,
) -> CaseOutcome:
    """One method on one case, scored; raises what the method raises.

    Args:
        case: The benchmark case.
        method: The method.
        settings: The run's settings.
        backend: The task values.
        matched_coalitions: The distinct coalitions the method may use (None: its own budget).

    Returns:
        The case's outcome.
    """
    ids = [m.id for m in case.memories]
    query = backend.query(case, settings)
    counter = CountingEvaluator(query)
    t0 = time.perf_counter()
    try:
        with backend.session(query):
            output = method.run(
                MethodContext(
                    case=case,
                    evaluate=counter,
                    settings=settings,
                    matched_coalitions=matched_coalitions,
                    method=method.name,
                    simulated=bool(getattr(backend, "simulated", False)),
                )
            )
    except InconsistentVerdictsError as exc:
        output = abstained(exc.reason)
    elapsed = time.perf_counter() - t0
    removed = set(output.cleared)
    kept = [mid for mid in ids if mid not in removed]
    quality = backend.measure(case, kept, settings)
    cost = CaseCost(
        model_calls=query.model_calls,
        agent_calls=query.agent_calls,
        judge_calls=query.judge_calls,
        evaluator_calls=counter.calls,
        coalitions=counter.coalitions,
        wall_seconds=elapsed,
        prompt_tokens=getattr(query, "prompt_tokens", None),
        completion_tokens=getattr(query, "completion_tokens", None),
    )
    return score_case(
        case,
        output,
        quality=quality,
        accuracy_none=backend.measure(case, ids, settings).accuracy,
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
    return tqdm(total=total, desc="bench", unit="case", disable=None)


class _Progress:
    """Shared state of a run: outcomes, failures, the stop reason (thread-safe)."""

    def __init__(self, methods: Sequence[BenchMethod]) -> None:
        self.per_case: dict[str, dict[str, CaseOutcome]] = {m.name: {} for m in methods}
        self.not_run: dict[str, str] = {}
        self.failures: list[CaseFailure] = []
        self.stopped: RunStopped | None = None
        self.lock = threading.Lock()


def _run_one(
    case: BenchCase,
    methods: Sequence[BenchMethod],
    reference: BenchMethod | None,
    given: int | None,
    settings: BenchSettings,
    backend: CaseBackend,
    state: _Progress,
    on_outcome: Callable[[str, CaseOutcome], None] | None,
    on_failure: Callable[[CaseFailure], None] | None,
) -> None:
    """Run every method on one case; outcomes already computed are reused.

    The reference runs first: its coalitions match the others' budgets unless ``given``.
    """
    matched = given
    for method in sorted(methods, key=lambda m: m is not reference):
        with state.lock:
            if state.stopped is not None or method.name in state.not_run:
                continue
            done = state.per_case[method.name].get(case.case_id)
        if done is not None:  # computed before (a resumed run)
            if method is reference and given is None:
                matched = done.coalitions
            continue
        try:
            outcome = run_case(case, method, settings, backend, matched_coalitions=matched)
        except MethodNotRunError as exc:
            with state.lock:
                state.not_run[method.name] = str(exc)
            continue
        except Exception as exc:
            stop = stop_cause(exc)
            if stop is not None:
                with state.lock:
                    state.stopped = state.stopped or stop
                return
            failure = CaseFailure(
                case_id=case.case_id,
                method=method.name,
                error=f"{type(exc).__name__}: {exc}"[:500],
            )
            with state.lock:
                state.failures.append(failure)
            if on_failure is not None:
                on_failure(failure)
            continue
        with state.lock:
            state.per_case[method.name][case.case_id] = outcome
        if method is reference and given is None:
            matched = outcome.coalitions
        if on_outcome is not None:
            on_outcome(method.name, outcome)


def run_benchmark(
    cases: Sequence[BenchCase],
    settings: BenchSettings,
    *,
    rater: Rater | None = None,
    keeper: Keeper | None = None,
    methods: Sequence[BenchMethod] | None = None,
    progress: bool = False,
    on_outcome: Callable[[str, CaseOutcome], None] | None = None,
    backend: CaseBackend = SIMULATED,
    completed: Mapping[tuple[str, str], CaseOutcome] | None = None,
    workers: int = 1,
    on_failure: Callable[[CaseFailure], None] | None = None,
    bar: Any = None,
    matched: dict[str, int] | None = None,
) -> BenchRun:
    """Run ``settings.methods`` (or ``methods``) on ``cases``.

    Args:
        cases: The benchmark cases.
        settings: The run's settings.
        rater: The rater of the ``llm-direct`` baseline (None: not run offline).
        keeper: The filter model of ``llm-filter`` (None: the simulated filter).
        methods: The methods (None: built from ``settings.methods``).
        progress: Show a progress bar.
        on_outcome: Called with (method, outcome) as each outcome is computed (the journal).
        backend: The task values: the simulated world or real models.
        completed: (case id, method) -> outcomes already computed (reused as they are).
        workers: The number of cases run at once.
        on_failure: Called with each failed (case, method).
        bar: Replaces the default progress bar (any object with ``update(n)``).
        matched: Case id -> distinct coalitions to match the ablation baselines' budgets to
            (by default the reference method's, measured in this run).

    Returns:
        The run: outcomes per method over the cohort of cases every method finished.

    Example:
        >>> from meclear_bench import BenchSettings, load_builtin_cases
        >>> from meclear_bench import run_benchmark
        >>> cases = load_builtin_cases()[:2]
        >>> run = run_benchmark(cases, BenchSettings(methods=["none", "loo"]))
        >>> sorted(run.outcomes)
        ['loo', 'none']
    """
    started = time.perf_counter()
    chosen = (
        list(methods)
        if methods is not None
        else [build_method(spec, settings, rater=rater, keeper=keeper) for spec in settings.methods]
    )
    state = _Progress(chosen)
    reference = _reference(chosen, settings)
    for (case_id, name), outcome in (completed or {}).items():
        if name in state.per_case:
            state.per_case[name][case_id] = outcome
    display = nullcontext(bar) if bar is not None else _progress(len(cases), progress)
    with display as shown:

        def one(case: BenchCase) -> None:
            budget = None if matched is None else matched.get(case.case_id)
            _run_one(
                case, chosen, reference, budget, settings, backend, state, on_outcome, on_failure
            )
            if shown is not None:
                shown.update(1)

        if workers <= 1:
            for case in cases:
                if state.stopped is not None:
                    break
                one(case)
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bench") as pool:
                for future in [pool.submit(one, case) for case in cases]:
                    future.result()
    return assemble_run(
        settings,
        [c.case_id for c in cases],
        [m.name for m in chosen],
        state.per_case,
        failures=state.failures,
        not_run=state.not_run,
        wall_seconds=time.perf_counter() - started,
        stopped=state.stopped,
    )


def assemble_run(
    settings: BenchSettings,
    case_ids: Sequence[str],
    methods: Sequence[str],
    per_case: Mapping[str, Mapping[str, CaseOutcome]],
    *,
    failures: Sequence[CaseFailure] = (),
    not_run: Mapping[str, str] | None = None,
    wall_seconds: float = 0.0,
    stopped: RunStopped | None = None,
) -> BenchRun:
    """The run of these outcomes (method -> case id -> outcome), in ``case_ids`` order.

    A method other than the reference that failed on a case the reference finished is
    excluded (its row, with the reason); the cohort is then the cases every remaining method
    finished without failing. Without a reference every failure excludes its case.

    Args:
        settings: The run's settings.
        case_ids: Every case id, in run order.
        methods: The methods that ran.
        per_case: Method -> case id -> outcome.
        failures: The failed (case, method) pairs.
        not_run: Method -> why it did not run.
        wall_seconds: The run's wall time.
        stopped: Why the run stopped early, if it did.

    Returns:
        The run.
    """
    not_run = dict(not_run or {})
    ref = _reference_name(methods, settings)
    excluded = _failed_methods(case_ids, per_case, failures, ref)
    failed = {f.case_id for f in failures if f.method not in excluded}
    ran = [name for name in methods if name not in not_run and name not in excluded]
    finished = [cid for cid in case_ids if all(cid in per_case.get(n, {}) for n in ran)]
    cohort = [cid for cid in finished if cid not in failed]
    done = set(finished) | failed
    return BenchRun(
        settings=settings,
        outcomes={name: [per_case[name][cid] for cid in cohort] for name in ran},
        not_run=not_run,
        failures=list(failures),
        failed=excluded,
        wall_seconds=wall_seconds,
        stopped=str(stopped) if stopped is not None else None,
        stopped_fatal=bool(stopped is not None and stopped.fatal),
        incomplete=[cid for cid in case_ids if cid not in done],
    )


def _reference_name(methods: Sequence[str], settings: BenchSettings) -> str | None:
    wanted = settings.reference_method
    if wanted is not None:
        return wanted if wanted in methods else None
    return next((name for name in methods if name.split(":")[0] == "meclear"), None)


def _failed_methods(
    case_ids: Sequence[str],
    per_case: Mapping[str, Mapping[str, CaseOutcome]],
    failures: Sequence[CaseFailure],
    reference: str | None,
) -> dict[str, str]:
    """Method -> why its row is excluded: it failed where the reference did not.

    A case the reference failed on too is the case's failure (e.g. a provider error on its
    prompts), not the method's.
    """
    if reference is None:
        return {}
    finished = per_case.get(reference, {})
    own: dict[str, list[CaseFailure]] = {}
    for f in failures:
        if f.method != reference and f.case_id in finished:
            own.setdefault(f.method, []).append(f)
    total = len(case_ids)
    return {
        method: (
            f"failed on {len({f.case_id for f in fs})} of {total} cases the reference "
            f"{reference} finished (row excluded; other methods keep these cases); first: "
            f"{fs[0].error}"
        )
        for method, fs in own.items()
    }
