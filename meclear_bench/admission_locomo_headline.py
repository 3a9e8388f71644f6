"""The admission headline on labels nobody here wrote, every method tuned alike.

``python -m meclear_bench.admission_locomo_headline --locomo DIR [--clark DIR] --out OUT``
measures ConMem and the three feature baselines on four candidate sets, each with a dev and
a test split (conversations 26, 30, 41 dev; CLARK-News by question hash):

- ``locomo_only``: LoCoMo observation records labelled by QA evidence citations (useful /
  unused, :mod:`.admission_locomo`): labels from the data alone;
- ``amac_turns``: A-MAC's public protocol, every dialogue turn a candidate, Store iff a QA
  question cites it (:mod:`.admission_locomo_turns`): labels from the data alone;
- ``builder`` (ours): false claims, wrong corrections, stale and current CLARK-News facts
  in our builder's wording;
- ``builder_paraphrased`` (ours): the same reworded by templates no reader rule was
  written against (:mod:`.admission_locomo_paraphrase`).

Every method is tuned alike on each set's dev split (:mod:`.admission_tuning`): its
published decision rule; its threshold chosen on dev by macro-F1; its threshold and
weights chosen on dev (baselines: a grid over their feature weights, A-MAC's own
procedure; ConMem: the 27 CMTE settings of its App. A re-decided on the recorded
evidence, the tie-break judge's verdict at zero). The test split is decided once by the
chosen rule on the recorded test scores. ConMem tuned alike is compared with every
baseline row by paired cluster-bootstrap intervals (:mod:`.admission_locomo_intervals`).
The blind-judge ablation (``w/o quality judge``) is re-decided on the same evidence with
the same thresholds. ``conmem graded`` re-decides the same evidence with the graded CMTE
(``AdmissionConfig.effect="graded"``: a positive contribution times its probe's strength,
:func:`~meclear_integrations.admission.scoring.probe_strength`), tuned alike (its 27
settings times its two strength kinds, and the threshold, on dev) and compared with every
baseline row as ConMem is. Every row reports the test ROC AUC of its score. Per candidate
kind, the recall of ConMem and of the best tuned baseline shows where either wins.

Figures from the default model are OFFLINE TEXT READER / SIMULATED figures
(:class:`~meclear_integrations.admission.reader.AdmissionReader`), never an LLM's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from meclear_integrations.admission.config import AdmissionConfig, CMTEWeights
from meclear_integrations.admission.decision import AdmissionDecision
from meclear_integrations.admission.dedup import DedupTextModel
from meclear_integrations.admission.labels import Decision
from meclear_integrations.admission.metrics import roc_auc
from meclear_integrations.admission.model import TextModel
from meclear_integrations.admission.reader import AdmissionReader
from meclear_integrations.admission.rescore import Grading, Variant, grid_weights, redecide

from .admission_baselines import AMACBaseline, AMEMBaseline, MemoryBankBaseline
from .admission_locomo import BenchCandidate, build_locomo_admission, select
from .admission_locomo_intervals import PairedDelta, cluster_of, paired_deltas
from .admission_locomo_paraphrase import PARAPHRASED_KINDS, paraphrase
from .admission_locomo_run import MethodScore, _conmem, _gather, _zero_verdicts, score_method
from .admission_locomo_turns import turn_candidates
from .admission_tuning import (
    apply_threshold,
    conmem_score,
    simplex,
    tune_threshold,
    tune_weights,
)

__all__ = [
    "AMAC_README",
    "SETS",
    "HeadlineResult",
    "HeadlineRow",
    "HeadlineSet",
    "arun_headline",
    "main",
]

SETS = ("locomo_only", "amac_turns", "builder", "builder_paraphrased")
LABEL_SOURCE = {
    "locomo_only": "LoCoMo QA evidence (data)",
    "amac_turns": "LoCoMo QA evidence (data), A-MAC's protocol",
    "builder": "ours (builder wording)",
    "builder_paraphrased": "ours (paraphrased)",
}
AMAC_README: dict[str, dict[str, float]] = {
    "a-mac": {"store_precision": 41.7, "store_recall": 97.2, "store_f1": 58.3},
    "a-mem": {"store_precision": 37.1, "store_recall": 100.0, "store_f1": 54.1},
    "memorybank": {"store_precision": 36.8, "store_recall": 58.3, "store_f1": 45.2},
    "memgpt": {"store_precision": 31.6, "store_recall": 33.3, "store_f1": 32.4},
    "conmem (ConMem paper)": {"store_precision": 41.8, "store_recall": 75.7, "store_f1": 53.9},
}
"""Store P / R / F1 (%) reported on A-MAC's protocol: A-MAC's README (the ConMem paper's
LoCoMo table repeats A-MAC's, A-mem's and MemoryBank's and adds its own)."""
FEATURES: dict[str, tuple[str, ...]] = {
    "a-mac": ("utility", "confidence", "novelty", "recency", "type_prior"),
    "a-mem": ("i_norm", "novelty"),
    "memorybank": ("recency", "relevance", "importance"),
}
GRID_STEP = {"a-mac": 0.1, "a-mem": 0.05, "memorybank": 0.05}
"""Weight-grid step per baseline (A-MAC's own grid is coarser still)."""
GRADED_KINDS = ("grounded_count", "grounded_share")
"""The graded CMTE's strength kinds its dev tuning chooses from (config default first)."""
PRIMARY = (0.5, 0.5, 1.5)


class HeadlineRow(BaseModel):
    """One method under one tuning on one set's test split."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: str
    """``conmem``, ``a-mac``, ``a-mem``, ``memorybank`` or ``conmem w/o quality judge``."""
    tuning: str
    """``published``, ``dev threshold`` or ``dev weights + threshold``."""
    threshold: float
    """The decision threshold on the method's score."""
    weights: list[float] | None = None
    """Feature weights (baselines) or CMTE setting (ConMem: irrelevant penalty, risk gain,
    risk penalty) when chosen on dev."""
    strength: str | None = None
    """The graded CMTE's strength kind (``conmem graded`` rows)."""
    auc: float | None = None
    """Test ROC AUC of the row's score (Store positive; threshold-free)."""
    dev_macro_f1: float | None = None
    """Dev macro-F1 of the chosen rule."""
    score: MethodScore
    """Test metrics."""
    conmem_minus: list[PairedDelta] = Field(default_factory=list)
    """ConMem tuned alike minus this row (balanced accuracy, macro-F1; points, 95%)."""
    graded_minus: list[PairedDelta] = Field(default_factory=list)
    """ConMem graded tuned alike minus this row (balanced accuracy, macro-F1; points, 95%)."""


class HeadlineSet(BaseModel):
    """One candidate set: rows, counts and the comparison."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """A :data:`SETS` entry."""
    label_source: str
    """Where its labels come from."""
    counts: dict[str, dict[str, int]]
    """Candidates per split and kind."""
    rows: list[HeadlineRow]
    """Every method and tuning on test."""
    best_baseline: str | None = None
    """The tuned baseline row with the best test macro-F1 (``method / tuning``)."""
    target_met: bool | None = None
    """ConMem tuned alike beats the best tuned baseline on balanced accuracy and macro-F1
    with both intervals above 0."""
    judge_ablation: list[PairedDelta] = Field(default_factory=list)
    """ConMem minus ConMem without the blind judge (published rule, same evidence)."""
    graded_target_met: bool | None = None
    """The target for ConMem graded tuned alike."""
    graded_vs_categorical: list[PairedDelta] = Field(default_factory=list)
    """ConMem graded tuned alike minus ConMem (categorical) tuned alike."""


class HeadlineResult(BaseModel):
    """Everything the headline writes to ``results.json``."""

    model_config = ConfigDict(extra="forbid")

    model: str
    """Which model answered."""
    label: str
    """OFFLINE TEXT READER / SIMULATED, or the model's label."""
    sets: list[HeadlineSet]
    """The four sets."""
    paper: dict[str, Any]
    """Figures reported on A-MAC's protocol."""
    replicates: int
    """Bootstrap replicates."""
    wall_seconds: float = 0.0
    """Elapsed time."""


def _vector(features: dict[str, Any], names: Sequence[str]) -> list[float]:
    return [float(features[n]) for n in names]


def _conmem_scores(
    decisions: Sequence[AdmissionDecision],
    zero: Sequence[Decision | None],
    weights: CMTEWeights,
    variant: Variant,
    gradings: Sequence[Grading] | None = None,
) -> list[float | None]:
    out: list[float | None] = []
    for i, (d, z) in enumerate(zip(decisions, zero, strict=True)):
        if not d.ok or z is None:
            out.append(None)
            continue
        grading = gradings[i] if gradings is not None else None
        decision, value, _ = redecide(
            d.probes, weights=weights, variant=variant, zero=z, grading=grading
        )
        out.append(conmem_score(value, decision))
    return out


def _score(
    name: str, cands: Sequence[BenchCandidate], scores: Sequence[float | None], t: float
) -> MethodScore:
    return score_method(name, cands, apply_threshold(scores, t))


async def _baseline_runs(
    cands: Sequence[BenchCandidate],
    model: TextModel,
    concurrency: int,
    on_done: Callable[[], None] | None,
) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for name, cls in (
        ("a-mac", AMACBaseline),
        ("a-mem", AMEMBaseline),
        ("memorybank", MemoryBankBaseline),
    ):
        baseline = cls(DedupTextModel(model))

        async def one(c: BenchCandidate, b: Any = baseline) -> Any:
            return await b.adecide(c.candidate_memory, c.historical_context, candidate_id=c.id)

        out[name] = [baseline, await _gather(cands, one, concurrency, on_done)]
    return out


async def _one_set(
    name: str,
    dev: Sequence[BenchCandidate],
    test: Sequence[BenchCandidate],
    model: TextModel,
    *,
    concurrency: int,
    replicates: int,
    on_done: Callable[[], None] | None,
) -> HeadlineSet:
    cands = [*dev, *test]
    nd = len(dev)
    cfg = AdmissionConfig()
    run_model = DedupTextModel(model)
    decisions = await _conmem(cands, run_model, cfg, concurrency, on_done)
    w = cfg.weights
    grid = grid_weights()
    settings = [(w, "full"), (w, "no_quality_judge")] + [(g, "full") for _, g in grid]

    def gradings_of(c: BenchCandidate) -> list[Grading]:
        return [Grading(c.historical_context, kind=k) for k in GRADED_KINDS]  # type: ignore[arg-type]

    zero, _ = await _zero_verdicts(
        cands,
        decisions,
        run_model,
        concurrency,
        settings,  # type: ignore[arg-type]
        gradings=gradings_of,
    )
    gold_dev = [c.label for c in dev]
    gold = [c.label for c in test]
    rows: list[HeadlineRow] = []
    graded_by_kind = {
        k: [Grading(c.historical_context, kind=k) for c in cands]  # type: ignore[arg-type]
        for k in GRADED_KINDS
    }
    chosen: dict[str, list[float | None]] = {}
    """Test scores of each ConMem method's dev-chosen rule (weights + threshold)."""

    def conmem_rows(method: str, variant: Variant, graded: bool = False) -> list[HeadlineRow]:
        kinds: tuple[str | None, ...] = GRADED_KINDS if graded else (None,)
        first = graded_by_kind[GRADED_KINDS[0]] if graded else None
        base = _conmem_scores(decisions, zero, w, variant, first)
        t, f1 = tune_threshold(base[:nd], gold_dev, published=0.0)
        strength = GRADED_KINDS[0] if graded else None
        out = [
            HeadlineRow(
                method=method,
                tuning="published",
                threshold=0.0,
                strength=strength,
                auc=roc_auc(base[nd:], gold),
                score=_score(method, test, base[nd:], 0.0),
            ),
            HeadlineRow(
                method=method,
                tuning="dev threshold",
                threshold=t,
                strength=strength,
                dev_macro_f1=f1,
                auc=roc_auc(base[nd:], gold),
                score=_score(method, test, base[nd:], t),
            ),
        ]
        if variant == "full":
            best: tuple[float, tuple[float, ...], float, list[float | None], str | None] | None
            best = None
            for kind in kinds:
                gradings = graded_by_kind[kind] if kind is not None else None
                for setting, weights in grid:
                    s = _conmem_scores(decisions, zero, weights, variant, gradings)
                    ts, fs = tune_threshold(s[:nd], gold_dev, published=0.0)
                    # ties: the primary setting, then the default strength kind (first)
                    preferred = setting == PRIMARY and (best is None or best[1] != PRIMARY)
                    if (
                        best is None
                        or round(fs, 12) > round(best[0], 12)
                        or (round(fs, 12) == round(best[0], 12) and preferred)
                    ):
                        best = (fs, setting, ts, s, kind)
            assert best is not None
            chosen[method] = best[3][nd:]
            out.append(
                HeadlineRow(
                    method=method,
                    tuning="dev weights + threshold",
                    threshold=best[2],
                    weights=list(best[1]),
                    strength=best[4],
                    dev_macro_f1=best[0],
                    auc=roc_auc(best[3][nd:], gold),
                    score=_score(method, test, best[3][nd:], best[2]),
                )
            )
        return out

    rows += conmem_rows("conmem", "full")
    tuned_conmem = rows[-1]
    rows += conmem_rows("conmem graded", "full", graded=True)
    tuned_graded = rows[-1]
    baseline_predictions: dict[int, list[Decision | None]] = {}
    runs = await _baseline_runs(cands, model, concurrency, on_done)
    for bname, (baseline, bds) in runs.items():
        scores = [b.score for b in bds]
        t, f1 = tune_threshold(scores[:nd], gold_dev, published=baseline.threshold)
        rows.append(
            HeadlineRow(
                method=bname,
                tuning="published",
                threshold=baseline.threshold,
                auc=roc_auc(scores[nd:], gold),
                score=_score(bname, test, scores[nd:], baseline.threshold),
            )
        )
        rows.append(
            HeadlineRow(
                method=bname,
                tuning="dev threshold",
                threshold=t,
                dev_macro_f1=f1,
                auc=roc_auc(scores[nd:], gold),
                score=_score(bname, test, scores[nd:], t),
            )
        )
        names = FEATURES[bname]
        vectors = [None if not b.ok else _vector(b.features, names) for b in bds]
        published = (
            tuple(baseline.weights)
            if bname != "a-mem"
            else (baseline.importance_weight, baseline.novelty_weight)
        )
        wts, tw, fw = tune_weights(
            vectors[:nd],
            gold_dev,
            grid=simplex(len(names), GRID_STEP[bname]),
            published=published,
            published_threshold=baseline.threshold,
        )
        tuned_scores = [
            None if v is None else sum(a * b for a, b in zip(wts, v, strict=True)) for v in vectors
        ]
        rows.append(
            HeadlineRow(
                method=bname,
                tuning="dev weights + threshold",
                threshold=tw,
                weights=list(wts),
                dev_macro_f1=fw,
                auc=roc_auc(tuned_scores[nd:], gold),
                score=_score(bname, test, tuned_scores[nd:], tw),
            )
        )
        baseline_predictions[len(rows) - 3] = apply_threshold(scores[nd:], baseline.threshold)
        baseline_predictions[len(rows) - 2] = apply_threshold(scores[nd:], t)
        baseline_predictions[len(rows) - 1] = apply_threshold(tuned_scores[nd:], tw)
    rows += conmem_rows("conmem w/o quality judge", "no_quality_judge")
    # ConMem tuned alike (its dev setting and threshold) against every other row
    conmem_test = apply_threshold(chosen["conmem"], tuned_conmem.threshold)
    graded_test = apply_threshold(chosen["conmem graded"], tuned_graded.threshold)
    clusters = [cluster_of(c.id, c.source) for c in test]
    ids = [c.id for c in test]
    for i, row in enumerate(rows):
        if i not in baseline_predictions:
            continue
        other = baseline_predictions[i]
        rows[i] = row.model_copy(
            update={
                "conmem_minus": paired_deltas(
                    gold, conmem_test, other, clusters, ids, replicates=replicates
                ),
                "graded_minus": paired_deltas(
                    gold, graded_test, other, clusters, ids, replicates=replicates
                ),
            }
        )
    # the blind judge's ablation under ConMem's published rule, with its interval
    judge_ablation = paired_deltas(
        gold,
        apply_threshold(_conmem_scores(decisions[nd:], zero[nd:], w, "full"), 0.0),
        apply_threshold(_conmem_scores(decisions[nd:], zero[nd:], w, "no_quality_judge"), 0.0),
        clusters,
        ids,
        replicates=replicates,
    )
    tuned_rows = [r for r in rows if r.method in FEATURES and r.tuning != "published"]
    best = max(tuned_rows, key=lambda r: r.score.macro_f1) if tuned_rows else None
    met = graded_met = None
    if best is not None:
        met = all(d.above_zero for d in best.conmem_minus)
        graded_met = all(d.above_zero for d in best.graded_minus)
    counts: dict[str, dict[str, int]] = {
        split: {k: sum(1 for c in group if c.kind == k) for k in sorted({c.kind for c in group})}
        for split, group in (("dev", dev), ("test", test))
    }
    return HeadlineSet(
        name=name,
        label_source=LABEL_SOURCE[name],
        counts=counts,
        rows=rows,
        best_baseline=f"{best.method} / {best.tuning}" if best else None,
        target_met=met,
        judge_ablation=judge_ablation,
        graded_target_met=graded_met,
        graded_vs_categorical=paired_deltas(
            gold, graded_test, conmem_test, clusters, ids, replicates=replicates
        ),
    )


def candidate_sets(
    locomo: str | Path, clark: str | Path | None, *, limit: int | None = None
) -> dict[str, tuple[list[BenchCandidate], list[BenchCandidate]]]:
    """The four sets' (dev, test) candidates (module docstring).

    Args:
        locomo: The LoCoMo directory.
        clark: The CLARK-News folder (None: no CLARK-News candidates).
        limit: About this many candidates per source and split (None: all).

    Returns:
        Set name -> (dev, test).
    """
    base = build_locomo_admission(locomo, clark=clark)
    obs = [c for c in base if c.kind in ("useful", "unused")]
    builder = [c for c in base if c.kind in PARAPHRASED_KINDS]
    groups = {
        "locomo_only": obs,
        "amac_turns": turn_candidates(locomo),
        "builder": builder,
        "builder_paraphrased": paraphrase(builder),
    }
    return {k: (select(v, "dev", limit), select(v, "test", limit)) for k, v in groups.items()}


async def arun_headline(
    sets: dict[str, tuple[list[BenchCandidate], list[BenchCandidate]]],
    model: TextModel | None = None,
    *,
    model_name: str = "offline-reader",
    label: str = "OFFLINE TEXT READER / SIMULATED",
    concurrency: int = 8,
    replicates: int = 2000,
    on_done: Callable[[], None] | None = None,
) -> HeadlineResult:
    """Run every set (module docstring).

    Args:
        sets: Set name -> (dev, test) candidates (:func:`candidate_sets`).
        model: The model of every role (default: the offline reader).
        model_name: Its name in the report.
        label: How its figures are labelled.
        concurrency: Candidates decided at once.
        replicates: Bootstrap replicates.
        on_done: Called after every decision.

    Returns:
        The result.
    """
    started = time.perf_counter()
    used = model if model is not None else AdmissionReader()
    out = [
        await _one_set(
            name, dev, test, used, concurrency=concurrency, replicates=replicates, on_done=on_done
        )
        for name, (dev, test) in sets.items()
    ]
    return HeadlineResult(
        model=model_name,
        label=label,
        sets=out,
        paper={"amac_protocol": AMAC_README},
        replicates=replicates,
        wall_seconds=time.perf_counter() - started,
    )


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _delta(ds: Sequence[PairedDelta]) -> str:
    if not ds:
        return ""
    return " / ".join(
        f"{d.delta:+.1f} [{d.lo:+.1f}, {d.hi:+.1f}]"
        if d.lo is not None and d.hi is not None
        else f"{d.delta:+.1f}"
        for d in ds
    )


def render_report(result: HeadlineResult) -> str:
    """The Markdown report: one table per set, per-kind recall, the paper's figures.

    Args:
        result: The result.

    Returns:
        The report.
    """
    lines = [
        f"# Admission headline ({result.label})",
        "",
        f"Model: {result.model}. Test split; every rule chosen on dev.",
        "",
    ]
    for s in result.sets:
        lines += [
            f"## {s.name}: labels from {s.label_source}",
            "",
            f"Counts: {json.dumps(s.counts)}. Best tuned baseline (test macro-F1): "
            f"{s.best_baseline}; target (ConMem tuned alike above it on both, intervals > 0): "
            f"{s.target_met}. Blind judge's ablation (ConMem minus ConMem w/o quality judge, "
            f"published rule, bal. acc / macro-F1 pp): {_delta(s.judge_ablation)}. "
            f"ConMem graded tuned alike: target {s.graded_target_met}; minus ConMem tuned "
            f"alike (bal. acc / macro-F1 pp): {_delta(s.graded_vs_categorical)}.",
            "",
            "| method | tuning | threshold / weights | AUC | bal. acc % | macro-F1 % "
            "| Store P / R / F1 % | ConMem tuned minus this: bal. acc / macro-F1 (pp, 95% CI) "
            "| ConMem graded tuned minus this |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in s.rows:
            m = r.score
            rule = (
                f"{r.threshold:.3f}"
                + (f" / {[round(x, 2) for x in r.weights]}" if r.weights else "")
                + (f" / {r.strength}" if r.strength else "")
            )
            store = " / ".join(_pct(d.get("store")) for d in (m.precision, m.recall, m.f1))
            auc = "-" if r.auc is None else f"{r.auc:.3f}"
            lines.append(
                f"| {r.method} | {r.tuning} | {rule} | {auc} | {_pct(m.balanced_accuracy)} "
                f"| {_pct(m.macro_f1)} | {store} | {_delta(r.conmem_minus)} "
                f"| {_delta(r.graded_minus)} |"
            )
        kinds = sorted(next(iter(s.rows)).score.kind_recall) if s.rows else []
        lines += [
            "",
            "Recall per kind (test): "
            + "; ".join(
                f"{r.method} ({r.tuning}): "
                + ", ".join(f"{k} {_pct(r.score.kind_recall.get(k))}" for k in kinds)
                for r in s.rows
                if r.tuning == "dev weights + threshold"
                or (r.method.startswith("conmem") and r.tuning == "dev threshold")
            ),
            "",
        ]
    lines += [
        "## Reported on A-MAC's protocol (A-MAC README; ConMem paper)",
        "",
        "| method | Store P / R / F1 % |",
        "|---|---|",
    ]
    for k, v in result.paper["amac_protocol"].items():
        lines.append(f"| {k} | {v['store_precision']} / {v['store_recall']} / {v['store_f1']} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the headline and write ``results.json`` and ``report.md``.

    Args:
        argv: Command-line arguments.

    Returns:
        The exit code.
    """
    parser = argparse.ArgumentParser(
        prog="python -m meclear_bench.admission_locomo_headline",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--locomo", required=True, type=Path)
    parser.add_argument("--clark", type=Path, default=None)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument(
        "--limit", type=int, default=None, help="about N candidates per source and split"
    )
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    parser.add_argument("--replicates", type=int, default=2000)
    args = parser.parse_args(argv)
    clark = args.clark or (args.locomo.parent / "clark_news")
    sets = candidate_sets(args.locomo, clark if clark.is_dir() else None, limit=args.limit)
    result = asyncio.run(arun_headline({k: sets[k] for k in args.sets}, replicates=args.replicates))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(result.model_dump_json(indent=1), encoding="utf-8")
    report = render_report(result)
    (args.out / "report.md").write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
