"""The LoCoMo admission bench: ConMem, the baselines, ablations, the 27-setting grid, presets.

Runs on the candidates of :mod:`.admission_locomo`; every model answer comes from the model
given (by default the OFFLINE TEXT-READING stand-in :class:`~..admission.reader.AdmissionReader`,
wrapped in :class:`~..admission.dedup.DedupTextModel`). Reported per method: accuracy, balanced
accuracy, Macro-F1, per-class precision / recall / F1 (Store precision / recall / F1 is
the paper's LoCoMo protocol), recall per candidate kind, Do-Not-Store recall on the
misaligned kinds, model calls per decision (requested, and sent after deduplication).
Ablations and the grid re-decide ConMem's recorded evidence (:mod:`..admission.rescore`); the cheap
preset is chosen on the dev split and measured on the test split.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from meclear_integrations.admission.config import AdmissionConfig, CMTEWeights
from meclear_integrations.admission.decision import AdmissionDecision
from meclear_integrations.admission.dedup import DedupTextModel
from meclear_integrations.admission.engine import ConMemAdmitter
from meclear_integrations.admission.labels import Decision
from meclear_integrations.admission.metrics import admission_metrics
from meclear_integrations.admission.model import TextModel
from meclear_integrations.admission.outputs import OutputParseError, TieBreakOutput, parse_output
from meclear_integrations.admission.prompts import tie_break_prompt
from meclear_integrations.admission.rescore import Grading, Variant, grid_weights, redecide
from meclear_integrations.admission.scoring import render_evidence

from .admission_baselines import AMACBaseline, AMEMBaseline, MemoryBankBaseline
from .admission_locomo import KINDS, MISALIGNED_KINDS, BenchCandidate
from .admission_tuning import apply_threshold, tune_threshold

__all__ = [
    "BASELINES",
    "PAPER",
    "PRESETS",
    "LocomoAdmissionResult",
    "MethodScore",
    "PresetScore",
    "arun_locomo_admission",
    "score_method",
]

BASELINES = ("a-mac", "a-mem", "memorybank")
PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    "irrelevant_if_open": {"irrelevant_probe": "if_open"},
    "irrelevant_if_uncertain": {"irrelevant_probe": "if_uncertain"},
    "zero_store": {"tie_break": "store"},
    "zero_do_not_store": {"tie_break": "do_not_store"},
    "if_uncertain+zero_store": {"irrelevant_probe": "if_uncertain", "tie_break": "store"},
    "if_uncertain+zero_do_not_store": {
        "irrelevant_probe": "if_uncertain",
        "tie_break": "do_not_store",
    },
}
"""Candidate cheap presets (AdmissionConfig updates) compared on the dev split."""
CHEAP_TOLERANCE = 0.02
"""A cheap preset may lose at most this much Macro-F1 on dev (2 pp)."""
CALLS_SLACK = 0.5
"""Presets within this many calls/decision of the cheapest count as equally cheap; the
best dev Macro-F1 among them is chosen."""

PAPER: dict[str, Any] = {
    "setting": (
        "Paper: MemAlign (1,079 curated cases, 72.2% Store, ten misalignment reasons, "
        "synthetic multi-session contexts written per case) with Qwen3.8-Max; LoCoMo with "
        "its own (unpublished) candidate and label construction. Here: LoCoMo observation "
        "records labelled by QA evidence citations, plus fault-builder and CLARK-News "
        "misaligned candidates, answered by the OFFLINE TEXT-READING stand-in. The numbers "
        "are not comparable in level; only the ordering of methods and the direction of "
        "the ablations are."
    ),
    "memalign_table1": {
        "conmem": {
            "accuracy": 75.16,
            "balanced_accuracy": 64.15,
            "macro_f1": 65.31,
            "store_recall": 88.96,
            "do_not_store_recall": 39.33,
        },
        "a-mac": {
            "accuracy": 69.33,
            "balanced_accuracy": 51.92,
            "macro_f1": 49.91,
            "store_recall": 91.12,
            "do_not_store_recall": 12.71,
        },
        "a-mem": {"store_recall": 88.83, "do_not_store_recall": 11.67},
        "memorybank": {
            "accuracy": 71.19,
            "macro_f1": 64.30,
            "store_recall": 66.24,
            "do_not_store_recall": 69.67,
        },
        "sage": {"store_recall": 34.15},
    },
    "locomo": {
        "conmem": {"store_precision": 41.8, "store_recall": 75.7, "store_f1": 53.9},
        "a-mac": {"store_precision": 41.7, "store_recall": 97.2},
        "a-mem": {"store_precision": 37.1, "store_recall": 100.0},
        "memorybank": {"store_f1": 45.2},
        "memgpt": {"store_f1": 32.4},
    },
    "table3_macro_f1": {"full": 65.31, "no_quality_judge": 59.87, "no_auditor": 52.41},
    "grid": {
        "accuracy": [75.16, 78.13],
        "balanced_accuracy": [64.15, 65.69],
        "macro_f1": [65.31, 67.50],
    },
    "calls_per_decision": 14.30,
}
"""The ConMem paper's reported figures (Tables 1-3, Sec. 5.3.2, App. A, App. C)."""


class MethodScore(BaseModel):
    """One method (or variant) on one set of candidates."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: str
    """Method, ablation or preset name."""
    n: int
    """Candidates."""
    errors: int
    """Candidates without a decision."""
    accuracy: float
    """Correct / n."""
    balanced_accuracy: float
    """Mean per-class recall."""
    macro_f1: float
    """Mean per-class F1."""
    precision: dict[str, float]
    """Per-class precision (``store`` is the paper's LoCoMo precision)."""
    recall: dict[str, float]
    """Per-class recall."""
    f1: dict[str, float]
    """Per-class F1."""
    kind_recall: dict[str, float]
    """Share of correct decisions per candidate kind."""
    reason_recall: dict[str, float] = Field(default_factory=dict)
    """Share of correct decisions per gold reason type (``directly_relevant``,
    ``not_needed_later``, ``false_memory_use``, ``stale_memory_use``)."""
    misaligned_do_not_store_recall: float | None
    """Do-Not-Store recall on the misaligned kinds (false claim, wrong correction, stale)."""
    reason_accuracy: float | None = None
    """Correctly rejected misaligned candidates whose post-hoc reason matches the kind's."""
    calls_per_decision: float = 0.0
    """Model calls the method requested per decision (the paper's count)."""
    sent_calls_per_decision: float | None = None
    """Model calls actually sent per decision after deduplication."""
    zero_score_rate: float | None = None
    """Share of decisions made by the zero-score rule (ConMem)."""


class PresetScore(BaseModel):
    """A candidate cheap preset on one split."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """Preset name (:data:`PRESETS`)."""
    split: str
    """dev or test."""
    config: dict[str, Any]
    """The AdmissionConfig updates."""
    score: MethodScore
    """Its metrics and calls."""
    macro_f1_delta: float
    """Macro-F1 minus the default's on the same split."""
    rejects_default_stores: int = 0
    """Candidates the default stores and this preset rejects (or fails on). A cheap preset
    must have none on dev: saving calls must never cost a memory the default keeps."""


class TunedBaseline(BaseModel):
    """A baseline with its threshold chosen on dev by macro-F1 (``admission_tuning``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """The baseline."""
    published: float
    """Its own threshold."""
    threshold: float
    """The threshold chosen on dev."""
    dev_macro_f1: float
    """Its dev macro-F1 at that threshold."""
    score: MethodScore
    """The measured split, decided by re-thresholding the recorded scores."""


class GridRow(BaseModel):
    """One of the 27 CMTE settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    irrelevant_penalty: float
    """Irrelevant-probe mild-use penalty."""
    risk_gain: float
    """Risk-probe safe-utility gain."""
    risk_penalty: float
    """Risk-probe harm penalty."""
    primary: bool
    """The paper's primary setting (0.5, 0.5, 1.5)."""
    score: MethodScore
    """Metrics under this setting."""


class LocomoAdmissionResult(BaseModel):
    """Everything ``meclear admission-bench --locomo`` writes to ``results.json``."""

    model_config = ConfigDict(extra="forbid")

    model: str
    """Which model answered."""
    offline_reader: bool
    """True when the offline text-reading stand-in answered (not an LLM)."""
    split: str
    """The split the main table is measured on."""
    counts: dict[str, int]
    """Candidates per kind on that split."""
    methods: list[MethodScore]
    """ConMem and the baselines."""
    ablations: list[MethodScore]
    """Table 3 variants on the recorded ConMem evidence."""
    grid: list[GridRow]
    """The 27 CMTE settings on the recorded ConMem evidence."""
    presets_dev: list[PresetScore]
    """Candidate cheap presets on the dev split."""
    cheap_preset: str | None
    """The cheapest preset within 2 pp Macro-F1 of the default on dev."""
    cheap_test: PresetScore | None
    """The chosen preset on the measured split."""
    sage: str
    """Why SAGE is not run."""
    paper: dict[str, Any]
    """The paper's figures and the difference in setting."""
    analysis_calls: int = 0
    """Tie-break calls the ablations and the grid needed beyond the decisions' own."""
    tuned: list[TunedBaseline] = Field(default_factory=list)
    """Each baseline with its threshold chosen on dev (``admission_tuning``)."""
    by_label_source: dict[str, list[MethodScore]] = Field(default_factory=dict)
    """Every method (tuned baselines too) on ``locomo_only`` candidates (labels from
    LoCoMo's QA evidence alone: useful / unused) and on ``builder`` candidates (ours: the
    fault builder's and CLARK-News wording)."""
    outcomes: list[dict[str, Any]] = Field(default_factory=list)
    """Per candidate: id, kind, label and each method's decision."""
    wall_seconds: float = 0.0
    """Elapsed time."""
    notes: list[str] = Field(default_factory=list)
    """Caveats."""


SAGE_NOTE = (
    "SAGE (Peng et al., 2026, arXiv:2603.15255) is a multi-agent self-evolution framework "
    "for LLM reasoning (Challenger, Planner, Solver, Critic trained by RL); the ConMem paper "
    "gives no admission prompt, aggregation rule or threshold for it, and its paper is not "
    "available here, so no faithful admission variant can be built: not run."
)


def score_method(
    method: str,
    candidates: Sequence[BenchCandidate],
    predictions: Sequence[Decision | None],
    *,
    calls: Sequence[int] = (),
    sent_calls: int | None = None,
    reasons: Sequence[str | None] = (),
    zero_score: Sequence[bool] = (),
) -> MethodScore:
    """Metrics of one method's decisions on ``candidates``.

    Args:
        method: The method's name.
        candidates: The labelled candidates.
        predictions: One decision per candidate (None when it failed).
        calls: Model calls requested per decision.
        sent_calls: Model calls sent in total (after deduplication), if known.
        reasons: Post-hoc reason per decision (ConMem).
        zero_score: Whether the zero-score rule decided, per decision (ConMem).

    Returns:
        The score.
    """
    gold = [c.label for c in candidates]
    m = admission_metrics(gold, list(predictions), [c.kind for c in candidates])
    mis = [
        (c, p) for c, p in zip(candidates, predictions, strict=True) if c.kind in MISALIGNED_KINDS
    ]
    mis_recall = sum(p == "do_not_store" for _, p in mis) / len(mis) if mis else None
    reason_accuracy = None
    if reasons:
        rejected = [
            (c, r)
            for c, p, r in zip(candidates, predictions, reasons, strict=True)
            if c.kind in MISALIGNED_KINDS and p == "do_not_store"
        ]
        if rejected:
            reason_accuracy = sum(r == c.reason_type for c, r in rejected) / len(rejected)
    n = len(candidates)
    return MethodScore(
        method=method,
        n=n,
        errors=m.errors,
        accuracy=m.accuracy,
        balanced_accuracy=m.balanced_accuracy,
        macro_f1=m.macro_f1,
        precision=m.precision,
        recall=m.recall,
        f1=m.f1,
        kind_recall={k: v.recall for k, v in m.per_reason.items()},
        reason_recall={
            k: v.recall
            for k, v in admission_metrics(
                gold, list(predictions), [c.reason_type for c in candidates]
            ).per_reason.items()
        },
        misaligned_do_not_store_recall=mis_recall,
        reason_accuracy=reason_accuracy,
        calls_per_decision=statistics.fmean(calls) if calls else 0.0,
        sent_calls_per_decision=sent_calls / n if sent_calls is not None and n else None,
        zero_score_rate=sum(zero_score) / n if zero_score and n else None,
    )


async def _gather(
    items: Sequence[BenchCandidate],
    one: Callable[[BenchCandidate], Any],
    concurrency: int,
    on_done: Callable[[], None] | None,
) -> list[Any]:
    gate = asyncio.Semaphore(max(1, concurrency))

    async def run(c: BenchCandidate) -> Any:
        async with gate:
            try:
                return await one(c)
            finally:
                if on_done is not None:
                    on_done()

    return list(await asyncio.gather(*(run(c) for c in items)))


DATA_LABELLED = ("useful", "unused")
"""Kinds whose label comes from LoCoMo's QA evidence alone (no text of ours)."""


async def _tuned(
    name: str,
    baseline: Any,
    dev: Sequence[BenchCandidate],
    candidates: Sequence[BenchCandidate],
    decided: Sequence[Any],
    run: tuple[Any, int, Callable[[], None] | None],
) -> TunedBaseline:
    """``name`` with its threshold chosen on dev; the split re-thresholded (no new call)."""
    one, concurrency, on_done = run
    dev_decisions = await _gather(dev, one, concurrency, on_done)
    threshold, dev_f1 = tune_threshold(
        [b.score for b in dev_decisions], [c.label for c in dev], published=baseline.threshold
    )
    score = score_method(
        f"{name} (tuned on dev)",
        candidates,
        apply_threshold([b.score for b in decided], threshold),
        calls=[b.cost.model_calls for b in decided],
    )
    return TunedBaseline(
        name=name,
        published=baseline.threshold,
        threshold=threshold,
        dev_macro_f1=dev_f1,
        score=score,
    )


async def _conmem(
    candidates: Sequence[BenchCandidate],
    model: TextModel,
    config: AdmissionConfig,
    concurrency: int,
    on_done: Callable[[], None] | None,
) -> list[AdmissionDecision]:
    admitter = ConMemAdmitter(model, config)

    async def one(c: BenchCandidate) -> AdmissionDecision:
        return await admitter.adecide(c.candidate_memory, c.historical_context, candidate_id=c.id)

    return await _gather(candidates, one, concurrency, on_done)


def _conmem_score(
    name: str,
    candidates: Sequence[BenchCandidate],
    ds: Sequence[AdmissionDecision],
    sent: int | None,
) -> MethodScore:
    return score_method(
        name,
        candidates,
        [d.decision for d in ds],
        calls=[d.cost.model_calls for d in ds],
        sent_calls=sent,
        reasons=[d.reason.reason_type if d.reason else None for d in ds],
        zero_score=[d.tie_break_ran for d in ds],
    )


def _ever_zero(
    d: AdmissionDecision,
    settings: Sequence[tuple[CMTEWeights, Variant]],
    gradings: Sequence[Grading] = (),
) -> bool:
    """Whether some re-decision of ``d`` lands on CMTE = 0 (needs the tie-break verdict).

    ``gradings``: also the graded CMTE's re-decisions under each of them.
    """
    return any(
        redecide(d.probes, weights=w, variant=v, zero="store", grading=g)[2]
        for w, v in settings
        for g in (None, *gradings)
    )


async def _zero_verdicts(
    candidates: Sequence[BenchCandidate],
    decisions: Sequence[AdmissionDecision],
    model: TextModel,
    concurrency: int,
    settings: Sequence[tuple[CMTEWeights, Variant]],
    gradings: Callable[[BenchCandidate], Sequence[Grading]] | None = None,
) -> tuple[list[Decision | None], int]:
    """The tie-break verdict on each recorded evidence some re-decision needs, and the calls.

    ``gradings``: per candidate, the graded CMTEs whose re-decisions may land on zero too
    (the tie-break judge reads the raw evidence, never a score: one verdict serves both).

    A verdict the run already has is reused; the judge is asked only about evidence that
    some variant or grid setting scores at zero and that it has not judged yet (these are
    analysis calls, outside the decisions' own count, as in the paper's App. C).
    """
    asked = 0

    async def one(pair: tuple[BenchCandidate, AdmissionDecision]) -> Decision | None:
        nonlocal asked
        c, d = pair
        if not d.ok:
            return None
        if d.tie_break is not None and d.config.tie_break == "judge":
            return d.tie_break.decision
        if not _ever_zero(d, settings, gradings(c) if gradings is not None else ()):
            return d.decision  # never used: no re-decision lands on zero
        prompt = tie_break_prompt(
            c.candidate_memory, c.historical_context, render_evidence(d.probes)
        )
        asked += 1
        try:
            verdict = parse_output(TieBreakOutput, await model.acomplete(prompt))
        except OutputParseError:
            return None
        return "store" if verdict.decision == "STORE" else "do_not_store"

    gate = asyncio.Semaphore(max(1, concurrency))

    async def bounded(pair: tuple[BenchCandidate, AdmissionDecision]) -> Decision | None:
        async with gate:
            return await one(pair)

    verdicts = list(
        await asyncio.gather(*(bounded(p) for p in zip(candidates, decisions, strict=True)))
    )
    return verdicts, asked


def _rescored(
    name: str,
    candidates: Sequence[BenchCandidate],
    decisions: Sequence[AdmissionDecision],
    zero: Sequence[Decision | None],
    *,
    weights: CMTEWeights,
    variant: Variant = "full",
) -> MethodScore:
    predictions: list[Decision | None] = []
    used: list[bool] = []
    for d, z in zip(decisions, zero, strict=True):
        if not d.ok or z is None:
            predictions.append(None)
            used.append(False)
            continue
        decision, _, was_zero = redecide(d.probes, weights=weights, variant=variant, zero=z)
        predictions.append(decision)
        used.append(was_zero)
    return score_method(name, candidates, predictions, zero_score=used)


def _fixed(zero: Decision, n: int) -> list[Decision | None]:
    return [zero] * n


async def arun_locomo_admission(
    candidates: Sequence[BenchCandidate],
    model: TextModel,
    *,
    split: Literal["dev", "test", "all"] = "test",
    dev: Sequence[BenchCandidate] = (),
    methods: Sequence[str] = ("conmem", *BASELINES),
    config: AdmissionConfig | None = None,
    concurrency: int = 8,
    dedupe: bool = True,
    model_name: str = "offline-reader",
    offline_reader: bool = True,
    on_done: Callable[[], None] | None = None,
) -> LocomoAdmissionResult:
    """Run the LoCoMo admission bench (module docstring) on ``candidates``.

    Args:
        candidates: The candidates to measure (one split).
        model: The model every role uses.
        split: The split's name in the report.
        dev: Dev-split candidates for choosing the cheap preset (empty: no choice).
        methods: ConMem and/or the baselines.
        config: ConMem's configuration (paper defaults when None).
        concurrency: Candidates decided at once.
        dedupe: Answer identical prompts once within each run (:class:`DedupTextModel`).
        model_name: The model's name in the report.
        offline_reader: Whether ``model`` is the offline text-reading stand-in.
        on_done: Called after every decision (a progress bar).

    Returns:
        The result.
    """
    started = time.perf_counter()
    cfg = config or AdmissionConfig()

    def fresh() -> tuple[TextModel, Callable[[], int | None]]:
        """A model for one run: deduplicated within the run, with its sent-call count."""
        if not dedupe:
            return model, lambda: None
        wrapped = DedupTextModel(model)
        return wrapped, lambda: wrapped.misses

    scores: list[MethodScore] = []
    outcomes: list[dict[str, Any]] = [
        {"id": c.id, "kind": c.kind, "label": c.label} for c in candidates
    ]
    decisions: list[AdmissionDecision] = []
    conmem_model: TextModel = model
    if "conmem" in methods:
        conmem_model, sent = fresh()
        decisions = await _conmem(candidates, conmem_model, cfg, concurrency, on_done)
        scores.append(_conmem_score("conmem", candidates, decisions, sent()))
        for o, d in zip(outcomes, decisions, strict=True):
            o["conmem"] = d.decision
            o["conmem_cmte"] = d.cmte
    predictions: dict[str, list[Decision | None]] = {}
    if decisions:
        predictions["conmem"] = [d.decision for d in decisions]
    tuned: list[TunedBaseline] = []
    for name in BASELINES:
        if name not in methods:
            continue
        cls = {"a-mac": AMACBaseline, "a-mem": AMEMBaseline, "memorybank": MemoryBankBaseline}
        run_model, sent = fresh()
        baseline = cls[name](run_model, config=cfg)

        async def one(c: BenchCandidate, b: Any = baseline) -> Any:
            return await b.adecide(c.candidate_memory, c.historical_context, candidate_id=c.id)

        bds = await _gather(candidates, one, concurrency, on_done)
        predictions[name] = [b.decision for b in bds]
        if dev:
            tuned.append(
                await _tuned(name, baseline, dev, candidates, bds, (one, concurrency, on_done))
            )
            predictions[f"{name} (tuned on dev)"] = apply_threshold(
                [b.score for b in bds], tuned[-1].threshold
            )
        scores.append(
            score_method(
                name,
                candidates,
                [b.decision for b in bds],
                calls=[b.cost.model_calls for b in bds],
                sent_calls=sent(),
            )
        )
        for o, b in zip(outcomes, bds, strict=True):
            o[name] = b.decision

    ablations: list[MethodScore] = []
    grid: list[GridRow] = []
    if decisions:
        w = cfg.weights
        variants: tuple[Variant, ...] = ("full", "no_quality_judge", "no_auditor")
        settings = [(w, v) for v in variants] + [(g, "full") for _, g in grid_weights()]
        zero, analysis_calls = await _zero_verdicts(
            candidates, decisions, conmem_model, concurrency, settings
        )
        ablations = [
            _rescored("full (re-decided)", candidates, decisions, zero, weights=w),
            _rescored(
                "w/o quality judge",
                candidates,
                decisions,
                zero,
                weights=w,
                variant="no_quality_judge",
            ),
            _rescored(
                "w/o attribution auditor",
                candidates,
                decisions,
                zero,
                weights=w,
                variant="no_auditor",
            ),
            _rescored(
                "zero -> STORE",
                candidates,
                decisions,
                _fixed("store", len(decisions)),
                weights=w,
            ),
            _rescored(
                "zero -> DO_NOT_STORE",
                candidates,
                decisions,
                _fixed("do_not_store", len(decisions)),
                weights=w,
            ),
        ]
        for (irr, gain, harm), weights in grid_weights():
            grid.append(
                GridRow(
                    irrelevant_penalty=irr,
                    risk_gain=gain,
                    risk_penalty=harm,
                    primary=(irr, gain, harm) == (0.5, 0.5, 1.5),
                    score=_rescored(
                        f"grid {irr}/{gain}/{harm}", candidates, decisions, zero, weights=weights
                    ),
                )
            )

    presets_dev: list[PresetScore] = []
    cheap: str | None = None
    cheap_test: PresetScore | None = None
    if dev and "conmem" in methods:
        dev_scores: dict[str, MethodScore] = {}
        dev_stored: dict[str, list[bool]] = {}
        for name, update in PRESETS.items():
            run_model, sent = fresh()
            ds = await _conmem(dev, run_model, cfg.model_copy(update=update), concurrency, on_done)
            dev_scores[name] = _conmem_score(name, dev, ds, sent())
            dev_stored[name] = [d.store for d in ds]
        base = dev_scores["default"]
        presets_dev = [
            PresetScore(
                name=name,
                split="dev",
                config=PRESETS[name],
                score=s,
                macro_f1_delta=s.macro_f1 - base.macro_f1,
                rejects_default_stores=sum(
                    1
                    for kept, own in zip(dev_stored["default"], dev_stored[name], strict=True)
                    if kept and not own
                ),
            )
            for name, s in dev_scores.items()
        ]
        within = [
            p
            for p in presets_dev
            if p.name != "default"
            and p.macro_f1_delta >= -CHEAP_TOLERANCE
            and p.rejects_default_stores == 0
        ]
        if within:
            cheapest = min(p.score.calls_per_decision for p in within)
            near = [p for p in within if p.score.calls_per_decision <= cheapest + CALLS_SLACK]
            best = max(near, key=lambda p: (p.score.macro_f1, -p.score.calls_per_decision))
            cheap = best.name
            run_model, sent = fresh()
            ds = await _conmem(
                candidates, run_model, cfg.model_copy(update=PRESETS[cheap]), concurrency, on_done
            )
            s = _conmem_score(cheap, candidates, ds, sent())
            default = next(m for m in scores if m.method == "conmem")
            cheap_test = PresetScore(
                name=cheap,
                split=split,
                config=PRESETS[cheap],
                score=s,
                macro_f1_delta=s.macro_f1 - default.macro_f1,
            )
    by_source: dict[str, list[MethodScore]] = {}
    for source, kinds in (("locomo_only", DATA_LABELLED), ("builder", None)):
        picked = [
            i for i, c in enumerate(candidates) if (c.kind in DATA_LABELLED) == (kinds is not None)
        ]
        if picked:
            by_source[source] = [
                score_method(m, [candidates[i] for i in picked], [p[i] for i in picked])
                for m, p in predictions.items()
            ]
    counts: dict[str, int] = {k: sum(1 for c in candidates if c.kind == k) for k in KINDS}
    notes = []
    if offline_reader:
        notes.append(
            "OFFLINE TEXT-READER: every role (probe generator, probe auditor, responders, "
            "blind judge, attribution auditor, tie-break, reason classifier, baseline "
            "feature raters) is AdmissionReader, a deterministic reader of the prompt text "
            "(admission/reader.py). These are not LLM results."
        )
    return LocomoAdmissionResult(
        model=model_name,
        offline_reader=offline_reader,
        split=split,
        counts=counts,
        methods=scores,
        ablations=ablations,
        grid=grid,
        presets_dev=presets_dev,
        cheap_preset=cheap,
        cheap_test=cheap_test,
        sage=SAGE_NOTE,
        paper=PAPER,
        outcomes=outcomes,
        analysis_calls=analysis_calls,
        tuned=tuned,
        by_label_source=by_source,
        wall_seconds=time.perf_counter() - started,
        notes=notes,
    )
