"""The admission bench: ConMem and the baselines on labelled cases, metrics and a report."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from meclear_integrations.admission.cases import AdmissionCase
from meclear_integrations.admission.config import AdmissionConfig
from meclear_integrations.admission.decision import AdmissionDecision
from meclear_integrations.admission.engine import ConMemAdmitter
from meclear_integrations.admission.metrics import AdmissionMetrics, admission_metrics
from meclear_integrations.admission.model import TextModel

from .admission_baselines import AMACBaseline, AMEMBaseline, MemoryBankBaseline
from .admission_baselines.base import BaselineDecision, FeatureBaseline

__all__ = [
    "METHODS",
    "AdmissionBenchResult",
    "CaseOutcome",
    "MethodName",
    "MethodResult",
    "arun_admission_bench",
    "render_report",
    "run_admission_bench",
]

MethodName = Literal["conmem", "a-mac", "a-mem", "memorybank"]
METHODS: tuple[MethodName, ...] = ("conmem", "a-mac", "a-mem", "memorybank")


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
    """Number of cases."""
    config: AdmissionConfig
    """ConMem configuration."""
    methods: list[MethodResult]
    """One entry per method."""
    wall_seconds: float = 0.0
    """Elapsed time of the whole bench."""
    notes: list[str] = Field(default_factory=list)
    """Caveats printed in the report."""


def _conmem_outcome(case: AdmissionCase, d: AdmissionDecision) -> CaseOutcome:
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
    )


def _baseline_outcome(case: AdmissionCase, d: BaselineDecision) -> CaseOutcome:
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


async def _run_case(
    method: MethodName,
    case: AdmissionCase,
    model: TextModel,
    config: AdmissionConfig,
    gate: asyncio.Semaphore,
    on_case: Callable[[], None] | None = None,
) -> CaseOutcome:
    async with gate:
        try:
            if method == "conmem":
                d = await ConMemAdmitter(model, config).adecide(
                    case.candidate_memory, case.context(), candidate_id=case.id
                )
                return _conmem_outcome(case, d)
            b = await _baseline(method, model, config).adecide(
                case.candidate_memory, case.context(), candidate_id=case.id
            )
            return _baseline_outcome(case, b)
        finally:
            if on_case is not None:
                on_case()


async def arun_admission_bench(
    cases: Sequence[AdmissionCase],
    model: TextModel,
    *,
    methods: Sequence[MethodName] = METHODS,
    config: AdmissionConfig | None = None,
    max_concurrent_cases: int = 4,
    model_name: str = "scripted",
    scripted: bool = True,
    cases_file: str = "",
    on_case: Callable[[], None] | None = None,
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

    Returns:
        Every decision and the metrics per method.
    """
    cfg = config or AdmissionConfig()
    started = time.perf_counter()
    gate = asyncio.Semaphore(max(1, max_concurrent_cases))
    results = []
    for method in methods:
        outcomes = list(
            await asyncio.gather(*(_run_case(method, c, model, cfg, gate, on_case) for c in cases))
        )
        results.append(_summarise(method, outcomes))
    notes = []
    if scripted:
        notes.append(
            "SCRIPTED: every model answer comes from ScriptedAdmissionModel, a deterministic "
            "keyword-cue stand-in written together with the shipped sample. These figures "
            "show the pipeline runs end to end; they are not LLM results and say nothing "
            "about ConMem's or the baselines' real quality."
        )
    return AdmissionBenchResult(
        model=model_name,
        scripted=scripted,
        cases_file=cases_file,
        n_cases=len(cases),
        config=cfg,
        methods=results,
        wall_seconds=time.perf_counter() - started,
        notes=notes,
    )


def run_admission_bench(cases: Sequence[AdmissionCase], model: TextModel, **kwargs: Any):
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


def render_report(result: AdmissionBenchResult) -> str:
    """``report.md``: the method table, per-reason recall and the caveats.

    Args:
        result: The benchmark result.

    Returns:
        The Markdown report.
    """
    kind = "SCRIPTED stand-in (not an LLM)" if result.scripted else "real chat model"
    lines = [
        "# Admission bench (ConMem and baselines)",
        "",
        f"- model: `{result.model}` ({kind})",
        f"- cases: {result.n_cases} from `{result.cases_file}`",
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
            lines += ["", "Failed ConMem cases:", *[f"- {o.id}: {o.error}" for o in failed]]
    return "\n".join(lines) + "\n"
