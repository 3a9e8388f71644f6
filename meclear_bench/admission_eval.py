"""The admission bench: ConMem and the baselines on labelled cases, metrics and a report.

The runner decides case by case (every method on a case before the case counts as done,
``max_concurrent_cases`` cases at once), so a run stopped early still compares the methods on
the same cases. With a journal (:mod:`.admission_journal`) each decision is written down as it
finishes and a rerun skips what is there; :func:`build_result` turns whatever finished into
the metrics, so a killed run still has figures for its finished cases.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from meclear_integrations.admission.config import AdmissionConfig
from meclear_integrations.admission.decision import AdmissionDecision
from meclear_integrations.admission.engine import ConMemAdmitter
from meclear_integrations.admission.metrics import AdmissionMetrics, admission_metrics
from meclear_integrations.admission.model import TextModel
from meclear_integrations.admission.prompts import Context

from .admission_baselines import AMACBaseline, AMEMBaseline, MemoryBankBaseline
from .admission_baselines.base import BaselineDecision, FeatureBaseline
from .admission_intervals import (
    MethodInterval,
    PairedDifference,
    case_weights,
    interval,
    metric_replicates,
)
from .admission_journal import AdmissionJournal

__all__ = [
    "METHODS",
    "AdmissionBenchResult",
    "BenchCase",
    "CaseOutcome",
    "GroupResult",
    "MethodName",
    "MethodResult",
    "arun_admission_bench",
    "build_result",
    "pending_decisions",
    "render_report",
    "run_admission_bench",
]

MethodName = Literal["conmem", "a-mac", "a-mem", "memorybank"]
METHODS: tuple[MethodName, ...] = ("conmem", "a-mac", "a-mem", "memorybank")


class BenchCase(Protocol):
    """What the runner reads of a case (an ``AdmissionCase`` or a LoCoMo ``BenchCandidate``)."""

    @property
    def id(self) -> str: ...  # noqa: D102

    @property
    def candidate_memory(self) -> str: ...  # noqa: D102

    @property
    def historical_context(self) -> Any: ...  # noqa: D102

    @property
    def label(self) -> str: ...  # noqa: D102

    @property
    def reason_type(self) -> str: ...  # noqa: D102


def _context(case: BenchCase) -> Context:
    make = getattr(case, "context", None)
    return make() if callable(make) else case.historical_context


class CaseOutcome(BaseModel):
    """One method on one case."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """Case id."""
    label: str
    """Gold decision."""
    reason_type: str
    """Gold reason type."""
    prediction: str | None
    """Predicted decision; None when a stage failed."""
    score: float | None
    """CMTE (ConMem) or the weighted feature score (baselines)."""
    predicted_reason: str | None = None
    """ConMem's post-hoc reason type."""
    tie_break: bool = False
    """Whether ConMem's tie-break judge decided."""
    error: str | None = None
    """Failed stage and message."""
    model_calls: int
    """Model invocations for this case."""
    latency_seconds: float
    """Summed model-call latency."""
    wall_seconds: float
    """Elapsed time of the case."""
    group: str | None = None
    """Where the case's label comes from (``locomo``, ``ours``, ``clark-news``), if known."""


class GroupResult(BaseModel):
    """One method on the cases of one label source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    group: str
    """``locomo`` (labels from LoCoMo's QA evidence), ``ours`` (builder-written), ..."""
    method: MethodName
    """Method name."""
    metrics: AdmissionMetrics
    """Classification metrics on the group's cases."""


class MethodResult(BaseModel):
    """One method over every case."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: MethodName
    """Method name."""
    metrics: AdmissionMetrics
    """Classification metrics."""
    calls_per_case: float
    """Mean model invocations per case."""
    latency_per_case: float
    """Mean summed model latency per case (seconds)."""
    wall_per_case: float
    """Mean elapsed time per case (seconds)."""
    tie_break_rate: float | None = None
    """Share of cases decided by the tie-break judge (ConMem only)."""
    reason_accuracy: float | None = None
    """Share of correctly rejected cases whose post-hoc reason matches gold (ConMem)."""
    cases: list[CaseOutcome]
    """Per-case outcomes."""


class AdmissionBenchResult(BaseModel):
    """Everything ``meclear admission-bench`` writes to ``results.json``."""

    model_config = ConfigDict(extra="forbid")

    model: str
    """Which model answered (``scripted`` for the offline stand-in)."""
    scripted: bool
    """True when the figures come from the scripted stand-in, not a real LLM."""
    cases_file: str
    """Where the cases came from."""
    n_cases: int
    """Number of cases selected for the run."""
    n_finished: int = 0
    """Cases every method decided (the metrics are computed on these; all of them when the
    run completed)."""
    complete: bool = True
    """False when the run stopped before every method decided every case."""
    limit: int | None = None
    """``--limit`` of the run."""
    selection: str = ""
    """How the measured cases were chosen (``--limit``, ``--kinds``), in words."""
    config: AdmissionConfig
    """ConMem configuration."""
    methods: list[MethodResult]
    """One entry per method."""
    groups: list[GroupResult] = Field(default_factory=list)
    """Every method per label source, when the cases carry one."""
    intervals: list[MethodInterval] = Field(default_factory=list)
    """Bootstrap 95% intervals of balanced accuracy and Macro-F1 per method."""
    differences: list[PairedDifference] = Field(default_factory=list)
    """ConMem minus each baseline (paired bootstrap 95% intervals)."""
    bootstrap_replicates: int = 0
    """Replicates behind ``intervals`` and ``differences`` (0: none computed)."""
    wall_seconds: float = 0.0
    """Elapsed time of the bench (this invocation)."""
    notes: list[str] = Field(default_factory=list)
    """Caveats printed in the report."""


def _group(case: BenchCase) -> str | None:
    kind = getattr(case, "kind", None)
    if kind in ("useful", "unused"):
        return "locomo"
    if kind in ("false_claim", "wrong_correction"):
        return "ours"
    if isinstance(kind, str) and kind.startswith("clark"):
        return "clark-news"
    return None


def _conmem_outcome(case: BenchCase, d: AdmissionDecision) -> CaseOutcome:
    return CaseOutcome(
        id=case.id,
        label=case.label,
        reason_type=case.reason_type,
        prediction=d.decision,
        score=d.cmte,
        predicted_reason=d.reason.reason_type if d.reason else None,
        tie_break=d.tie_break_ran,
        error=f"{d.error.stage}: {d.error.message}" if d.error else None,
        model_calls=d.cost.model_calls,
        latency_seconds=d.cost.latency_seconds,
        wall_seconds=d.cost.wall_seconds,
        group=_group(case),
    )


def _baseline_outcome(case: BenchCase, d: BaselineDecision) -> CaseOutcome:
    return CaseOutcome(
        id=case.id,
        label=case.label,
        reason_type=case.reason_type,
        prediction=d.decision,
        score=d.score,
        error=f"{d.error.stage}: {d.error.message}" if d.error else None,
        model_calls=d.cost.model_calls,
        latency_seconds=d.cost.latency_seconds,
        wall_seconds=d.cost.wall_seconds,
        group=_group(case),
    )


def _summarise(method: MethodName, outcomes: list[CaseOutcome]) -> MethodResult:
    metrics = admission_metrics(
        [o.label for o in outcomes],
        [o.prediction for o in outcomes],
        [o.reason_type for o in outcomes],
    )
    extra: dict[str, Any] = {}
    if method == "conmem":
        extra["tie_break_rate"] = sum(o.tie_break for o in outcomes) / max(1, len(outcomes))
        rejected = [o for o in outcomes if o.label == "do_not_store" == o.prediction]
        extra["reason_accuracy"] = (
            sum(o.predicted_reason == o.reason_type for o in rejected) / len(rejected)
            if rejected
            else None
        )
    return MethodResult(
        method=method,
        metrics=metrics,
        calls_per_case=statistics.fmean(o.model_calls for o in outcomes) if outcomes else 0.0,
        latency_per_case=statistics.fmean(o.latency_seconds for o in outcomes) if outcomes else 0.0,
        wall_per_case=statistics.fmean(o.wall_seconds for o in outcomes) if outcomes else 0.0,
        cases=outcomes,
        **extra,
    )


def _baseline(method: MethodName, model: TextModel, config: AdmissionConfig) -> FeatureBaseline:
    cls = {"a-mac": AMACBaseline, "a-mem": AMEMBaseline, "memorybank": MemoryBankBaseline}
    return cls[method](model, config=config)


async def _decide(
    method: MethodName, case: BenchCase, model: TextModel, config: AdmissionConfig
) -> CaseOutcome:
    if method == "conmem":
        d = await ConMemAdmitter(model, config).adecide(
            case.candidate_memory, _context(case), candidate_id=case.id
        )
        return _conmem_outcome(case, d)
    b = await _baseline(method, model, config).adecide(
        case.candidate_memory, _context(case), candidate_id=case.id
    )
    return _baseline_outcome(case, b)


async def _run_case(
    case: BenchCase,
    methods: Sequence[MethodName],
    model: TextModel,
    config: AdmissionConfig,
    gate: asyncio.Semaphore,
    done: dict[tuple[str, str], CaseOutcome],
    journal: AdmissionJournal | None,
    on_case: Callable[[], None] | None,
    retry_failed: bool,
) -> None:
    todo = [
        m
        for m in methods
        if (m, case.id) not in done or (retry_failed and done[(m, case.id)].error is not None)
    ]
    if not todo:
        return
    async with gate:
        for method in todo:
            outcome = await _decide(method, case, model, config)
            done[(method, case.id)] = outcome
            if journal is not None:
                journal.record(method, outcome.model_dump(mode="json"))
            if on_case is not None:
                on_case()


def _journalled(
    journal: AdmissionJournal | None, cases: Sequence[BenchCase]
) -> dict[tuple[str, str], CaseOutcome]:
    if journal is None:
        return {}
    ids = {c.id for c in cases}
    return {
        key: CaseOutcome.model_validate(value)
        for key, value in journal.done.items()
        if key[1] in ids
    }


def pending_decisions(
    cases: Sequence[BenchCase],
    methods: Sequence[MethodName],
    journal: AdmissionJournal | None,
    *,
    retry_failed: bool = False,
) -> int:
    """How many (method, case) decisions a run still has to make (for a progress bar).

    Args:
        cases: The cases of the run.
        methods: The methods of the run.
        journal: The run's journal (None: nothing decided yet).
        retry_failed: Whether journalled decisions that failed are made again.

    Returns:
        The number of decisions left.
    """
    done = _journalled(journal, cases)
    return sum(
        1
        for c in cases
        for m in methods
        if (m, c.id) not in done or (retry_failed and done[(m, c.id)].error is not None)
    )


async def arun_admission_bench(
    cases: Sequence[BenchCase],
    model: TextModel,
    *,
    methods: Sequence[MethodName] = METHODS,
    config: AdmissionConfig | None = None,
    max_concurrent_cases: int = 4,
    model_name: str = "scripted",
    scripted: bool = True,
    cases_file: str = "",
    on_case: Callable[[], None] | None = None,
    journal: AdmissionJournal | None = None,
    retry_failed: bool = False,
    limit: int | None = None,
    selection: str = "",
    bootstrap: int = 0,
    on_progress: Callable[[AdmissionBenchResult], None] | None = None,
) -> AdmissionBenchResult:
    """Run every method on every case (cases concurrently, up to ``max_concurrent_cases``).

    Args:
        cases: The labelled admission cases.
        model: The model every method uses.
        methods: The methods to run (ConMem and the baselines).
        config: ConMem's configuration.
        max_concurrent_cases: Cases decided at once.
        model_name: The model's name in the report.
        scripted: Whether the model is the SCRIPTED stand-in (labels the report).
        cases_file: The case file's path in the report.
        on_case: Called after each (method, case) decision (a progress bar).
        journal: Where each decision is written as it finishes; the decisions already in it
            are not made again (a resumed run).
        retry_failed: Make journalled decisions that ended in an error again.
        limit: The ``--limit`` the cases were chosen with (shown in the report).
        selection: How the cases were chosen, in words (the report's header).
        bootstrap: Bootstrap replicates of the intervals (0: none).
        on_progress: Called with the result so far after each finished case (a partial
            report on disk).

    Returns:
        Every decision and the metrics per method.
    """
    cfg = config or AdmissionConfig()
    started = time.perf_counter()
    gate = asyncio.Semaphore(max(1, max_concurrent_cases))
    done = _journalled(journal, cases)

    def result(final: bool) -> AdmissionBenchResult:
        return build_result(
            cases,
            done,
            methods=methods,
            config=cfg,
            model_name=model_name,
            scripted=scripted,
            cases_file=cases_file,
            limit=limit,
            selection=selection,
            bootstrap=bootstrap if final else 0,
            wall_seconds=time.perf_counter() - started,
        )

    async def one(case: BenchCase) -> None:
        await _run_case(case, methods, model, cfg, gate, done, journal, on_case, retry_failed)
        if on_progress is not None:
            on_progress(result(final=False))

    await asyncio.gather(*(one(c) for c in cases))
    return result(final=True)


def build_result(
    cases: Sequence[BenchCase],
    done: dict[tuple[str, str], CaseOutcome],
    *,
    methods: Sequence[MethodName],
    config: AdmissionConfig,
    model_name: str,
    scripted: bool,
    cases_file: str = "",
    limit: int | None = None,
    selection: str = "",
    bootstrap: int = 0,
    seed: int = 0,
    wall_seconds: float = 0.0,
) -> AdmissionBenchResult:
    """The metrics on the cases every method decided (all of them once the run is complete).

    Args:
        cases: The cases of the run, in order.
        done: ``(method, case id) -> outcome`` of the finished decisions.
        methods: The methods of the run.
        config: ConMem's configuration.
        model_name: The model's name in the report.
        scripted: Whether the model is the SCRIPTED stand-in.
        cases_file: The case file's path in the report.
        limit: The ``--limit`` of the run.
        selection: How the cases were chosen, in words (the report's header).
        bootstrap: Bootstrap replicates of the intervals (0: none).
        seed: Bootstrap seed.
        wall_seconds: Elapsed time of the run.

    Returns:
        The result (``complete`` False when some decision is missing).
    """
    finished = [c for c in cases if all((m, c.id) in done for m in methods)]
    results = [_summarise(m, [done[(m, c.id)] for c in finished]) for m in methods]
    groups = sorted({g for c in finished if (g := done[(methods[0], c.id)].group)})
    by_group = [
        GroupResult(
            group=g,
            method=r.method,
            metrics=admission_metrics(
                [o.label for o in r.cases if o.group == g],
                [o.prediction for o in r.cases if o.group == g],
                [o.reason_type for o in r.cases if o.group == g],
            ),
        )
        for g in groups
        for r in results
    ]
    intervals, differences = _intervals(results, bootstrap, seed) if finished else ([], [])
    notes = []
    if scripted:
        notes.append(
            "SCRIPTED: every model answer comes from ScriptedAdmissionModel, a deterministic "
            "keyword-cue stand-in written together with the shipped sample. These figures "
            "show the pipeline runs end to end; they are not LLM results and say nothing "
            "about ConMem's or the baselines' real quality."
        )
    if model_name == "offline-reader":
        notes.append(
            "OFFLINE TEXT READER: every model answer comes from AdmissionReader, a "
            "deterministic text-reading stand-in (not an LLM)."
        )
    complete = len(finished) == len(cases)
    if not complete:
        notes.append(
            f"PARTIAL: {len(finished)} of {len(cases)} cases decided by every method; the "
            "figures cover those cases only (rerun with the same --out to finish)."
        )
    return AdmissionBenchResult(
        model=model_name,
        scripted=scripted,
        cases_file=cases_file,
        n_cases=len(cases),
        n_finished=len(finished),
        complete=complete,
        limit=limit,
        selection=selection,
        config=config,
        methods=results,
        groups=by_group,
        intervals=intervals,
        differences=differences,
        bootstrap_replicates=bootstrap if finished else 0,
        wall_seconds=wall_seconds,
        notes=notes,
    )


def _intervals(
    results: list[MethodResult], replicates: int, seed: int
) -> tuple[list[MethodInterval], list[PairedDifference]]:
    if replicates <= 0:
        return [], []
    n = len(results[0].cases)
    weights = case_weights(n, replicates, seed)
    reps = {
        r.method: metric_replicates(
            [o.label for o in r.cases], [o.prediction for o in r.cases], weights
        )
        for r in results
    }
    intervals = [
        MethodInterval(method=m, metric=k, value=float(v[0]), low=lo, high=hi)
        for m, by in reps.items()
        for k, v in by.items()
        for lo, hi in [interval(v)]
    ]
    differences = []
    if "conmem" in reps:
        for m, by in reps.items():
            if m == "conmem":
                continue
            for k, v in by.items():
                diff = reps["conmem"][k] - v
                lo, hi = interval(diff)
                differences.append(
                    PairedDifference(
                        reference="conmem",
                        method=m,
                        metric=k,
                        n=n,
                        difference=float(diff[0]),
                        low=lo,
                        high=hi,
                    )
                )
    return intervals, differences


def run_admission_bench(
    cases: Sequence[BenchCase], model: TextModel, **kwargs: Any
) -> AdmissionBenchResult:
    """Synchronous :func:`arun_admission_bench` (on a private event loop).

    Args:
        cases: The labelled admission cases.
        model: The model every method uses.
        **kwargs: As in :func:`arun_admission_bench`.

    Returns:
        Every decision and the metrics per method.
    """
    return asyncio.run(arun_admission_bench(cases, model, **kwargs))


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _ci(lo: float | None, hi: float | None) -> str:
    return "-" if lo is None or hi is None else f"[{100 * lo:.1f}, {100 * hi:.1f}]"


def _interval_lines(result: AdmissionBenchResult) -> list[str]:
    if not result.intervals:
        return []
    lines = [
        "",
        f"## Bootstrap 95% intervals ({result.bootstrap_replicates} case resamples)",
        "",
        "| method | bal. acc % | 95% CI | macro-F1 % | 95% CI |",
        "|---|---|---|---|---|",
    ]
    by = {(i.method, i.metric): i for i in result.intervals}
    for m in result.methods:
        b, f = by[(m.method, "balanced_accuracy")], by[(m.method, "macro_f1")]
        lines.append(
            f"| {m.method} | {_pct(b.value)} | {_ci(b.low, b.high)} | {_pct(f.value)} | "
            f"{_ci(f.low, f.high)} |"
        )
    if result.differences:
        lines += [
            "",
            "ConMem minus each baseline on the same cases (paired bootstrap, pp):",
            "",
            "| baseline | metric | n | difference | 95% CI |",
            "|---|---|---|---|---|",
        ]
        for d in result.differences:
            lines.append(
                f"| {d.method} | {d.metric} | {d.n} | {100 * d.difference:+.1f} | "
                f"{_ci(d.low, d.high)} |"
            )
    return lines


_GROUP_TITLES = {
    "locomo": "LoCoMo labels (observation cited by a QA question or not; nobody here wrote them)",
    "ours": "builder-written misaligned candidates (OURS: false claims, wrong corrections)",
    "clark-news": "CLARK-News stale / current facts (validity dates CLARK's, wording ours)",
}


def _group_lines(result: AdmissionBenchResult) -> list[str]:
    if not result.groups:
        return []
    lines = [
        "",
        "## By label source",
        "",
        "| source | n | method | bal. acc % | macro-F1 % | store recall % | "
        "do-not-store recall % | errors |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for g in result.groups:
        k = g.metrics
        present = {c for c in ("store", "do_not_store") if _has(result, g.group, c)}
        both = len(present) == 2  # balanced accuracy and Macro-F1 need both labels
        recall = {c: _pct(k.recall[c]) if c in present else "-" for c in k.recall}
        lines.append(
            f"| {_GROUP_TITLES.get(g.group, g.group)} | {k.n} | {g.method} | "
            f"{_pct(k.balanced_accuracy) if both else '-'} | {_pct(k.macro_f1) if both else '-'} "
            f"| {recall['store']} | {recall['do_not_store']} | {k.errors} |"
        )
    return lines


def _has(result: AdmissionBenchResult, group: str, label: str) -> bool:
    return any(o.group == group and o.label == label for o in result.methods[0].cases)


def render_report(result: AdmissionBenchResult) -> str:
    """``report.md``: the method table, per-reason recall and the caveats.

    Args:
        result: The benchmark result.

    Returns:
        The Markdown report.
    """
    if result.scripted:
        kind = "SCRIPTED stand-in (not an LLM)"
    elif result.model == "offline-reader":
        kind = "OFFLINE TEXT-READING stand-in (not an LLM)"
    else:
        kind = "real chat model"
    lines = [
        "# Admission bench (ConMem and baselines)",
        "",
        f"- model: `{result.model}` ({kind})",
        f"- cases: {result.n_cases} from `{result.cases_file}`"
        + (f" ({result.selection})" if result.selection else ""),
        f"- finished: {result.n_finished} of {result.n_cases} cases decided by every method"
        + ("" if result.complete else " (PARTIAL run)"),
        f"- ConMem: epsilon={result.config.epsilon:g}, seed={result.config.seed}, "
        f"max_parse_attempts={result.config.max_parse_attempts}",
        "",
        *[f"> {n}" for n in result.notes],
        "",
        "| method | acc % | bal. acc % | macro-F1 % | store recall % | do-not-store recall % "
        "| errors | calls/case | latency s/case | tie-break % |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in result.methods:
        k = m.metrics
        lines.append(
            f"| {m.method} | {_pct(k.accuracy)} | {_pct(k.balanced_accuracy)} | "
            f"{_pct(k.macro_f1)} | {_pct(k.recall['store'])} | {_pct(k.recall['do_not_store'])} "
            f"| {k.errors} | {m.calls_per_case:.2f} | {m.latency_per_case:.4f} | "
            f"{_pct(m.tie_break_rate)} |"
        )
    lines += _interval_lines(result) + _group_lines(result)
    reasons = sorted({r for m in result.methods for r in m.metrics.per_reason})
    lines += [
        "",
        "## Per-reason recall (% of cases of that gold reason decided correctly)",
        "",
        "| reason | n | " + " | ".join(m.method for m in result.methods) + " |",
        "|---|---|" + "---|" * len(result.methods),
    ]
    for r in reasons:
        n = next(m.metrics.per_reason[r].n for m in result.methods if r in m.metrics.per_reason)
        cells = [
            _pct(m.metrics.per_reason[r].recall) if r in m.metrics.per_reason else "-"
            for m in result.methods
        ]
        lines.append(f"| {r} | {n} | " + " | ".join(cells) + " |")
    conmem = next((m for m in result.methods if m.method == "conmem"), None)
    if conmem is not None:
        lines += [
            "",
            f"ConMem post-hoc reason accuracy on correctly rejected cases: "
            f"{_pct(conmem.reason_accuracy)} % (interpretation only; never changes a decision).",
        ]
        failed = [o for o in conmem.cases if o.error]
        if failed:
            gate = admission_metrics(
                [o.label for o in conmem.cases],
                [o.prediction or "do_not_store" for o in conmem.cases],
                [o.reason_type for o in conmem.cases],
            )
            lines += [
                "",
                f"ConMem decided {len(conmem.cases) - len(failed)} of {len(conmem.cases)} "
                "cases (the table counts a failure as a wrong decision). As the gate deploys "
                'it (`on_error="reject"`: a failed decision rejects the memory): bal. acc '
                f"{_pct(gate.balanced_accuracy)} %, macro-F1 {_pct(gate.macro_f1)} %, "
                f"store recall {_pct(gate.recall['store'])} %.",
                "",
                "Failed ConMem cases:",
                *[f"- {o.id}: {o.error}" for o in failed],
            ]
    return "\n".join(lines) + "\n"
