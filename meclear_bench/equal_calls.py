"""Every method at equal model calls: the headline comparison, and quality-versus-calls curves.

Cost is model calls (agent + judge, verification included, deduplicated as a user's cache
would). MeClear runs once with the run's engine configuration; its model calls on each case
are the budget every baseline gets on that case. Each baseline has a ladder of budgets
ordered by cost (:func:`default_ladders`): ContextCite and ProxySPEX, each also with the
answer-backed flag rule and verified deletions (``-answers``, :mod:`.methods.answer_rule`),
B = 8 ... 32 distinct
ablations, then T = 2 ... 8 trials on each of the 32 (adaptive trials off: every coalition,
the baseline and the candidates get T trials); LOO T = 1 ... 12 trials per coalition; every
verifying baseline keeps its own tuned verification settings on every rung
(``BenchSettings.verification``; a context gets at least T trials whatever its cap);
fixed-cost methods (``loo-once``, ``newest``, ``llm-filter``) one rung; the oracle (the ceiling)
and no clearance are reported beside them at no cost. Every rung runs on every case (the
curve's point: its mean calls and quality); on each case the headline uses the first rung
that spent at least MeClear's calls on that case, else the largest rung (a method that
stops early, e.g. on a clean query, cannot be made to spend more). The choice reads only
cost, never quality. That per-case matching is the second table; the headline matches each
baseline once, at a fixed budget: the first rung of its ladder whose mean calls over the
split reach MeClear's mean calls (else its largest rung), so a baseline is never pinned to
its weakest budget on the cases MeClear finds cheap. Paired differences (MeClear minus each
baseline at its matched rung) get two-level cluster-bootstrap intervals (:mod:`.bootstrap`).

All figures are SIMULATED unless the run's backend is a real model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cases import BenchCase
from .figures import load_pyplot
from .methods.base import BenchMethod
from .methods.contextcite import ContextCiteAnswersMethod, ContextCiteMethod
from .methods.llm_filter import LlmFilterMethod
from .methods.loo import LooMethod, LooOnceMethod
from .methods.meclear import MeClearMethod
from .methods.newest import NewestWinsMethod
from .methods.none import NoClearance
from .methods.proxyspex import ProxySpexAnswersMethod, ProxySpexMethod
from .methods.targets import TargetOracle
from .metrics import summarize
from .outcomes import CaseOutcome
from .results import build_results
from .runner import assemble_run, run_benchmark
from .settings import BenchSettings

__all__ = [
    "HEADLINE_METRICS",
    "Rung",
    "default_ladders",
    "equal_calls",
    "equal_calls_table",
    "write_equal_calls_figure",
]

HEADLINE_METRICS = (
    "expected_recovery",
    "evidence_correct",
    "recovery",
    "exact_match",
    "deleted_exact",
    "cleared_extra_background",
    "harm_rate",
    "model_calls_per_case",
)
"""What the equal-calls table reports per method."""

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Rung:
    """One budget of one baseline: the method and the settings it runs under."""

    label: str
    """The budget, as shown on the curve (e.g. ``B=32, T=2``)."""
    method: BenchMethod
    """The method (its name is the family's)."""
    settings: BenchSettings
    """The run's settings at this budget."""


def _named(method: BenchMethod, name: str) -> BenchMethod:
    method.name = name
    return method


def _trials(base: BenchSettings, trials: int) -> BenchSettings:
    policy = base.trial_policy()
    if trials <= 1:
        return base.model_copy(update={"policy": policy})
    # each baseline keeps its own tuned verification (BenchSettings.verification); the
    # engine gives a context at least T trials whatever the cap says
    fixed = policy.updated(trials=trials, adaptive_trials=False)
    return base.model_copy(update={"policy": fixed})


def default_ladders(
    base: BenchSettings, families: Sequence[str] | None = None
) -> dict[str, list[Rung]]:
    """Each baseline's budgets, cheapest first (module docstring).

    Args:
        base: The run's settings (budgets are not matched to coalitions).
        families: The baselines wanted (None: all of them).

    Returns:
        Family name -> its rungs.
    """
    plain = base.model_copy(update={"match_budget": False})
    ladders: dict[str, list[Rung]] = {}
    surrogates: tuple[tuple[str, Callable[[], BenchMethod]], ...] = (
        ("contextcite", ContextCiteMethod),
        ("contextcite-answers", ContextCiteAnswersMethod),
        ("proxyspex", ProxySpexMethod),
        ("proxyspex-answers", ProxySpexAnswersMethod),
    )
    for name, make in surrogates:
        rungs = [
            Rung(f"B={b}", _named(make(), name), plain.model_copy(update={"surrogate_budget": b}))
            for b in (8, 12, 16, 24, 32)
        ]
        at_32 = plain.model_copy(update={"surrogate_budget": 32})
        rungs += [
            Rung(f"B=32, T={t}", _named(make(), name), _trials(at_32, t)) for t in (2, 3, 4, 6, 8)
        ]
        ladders[name] = rungs
    ladders["loo"] = [
        Rung(f"T={t}", _named(LooMethod(), "loo"), _trials(plain, t))
        for t in (1, 2, 3, 4, 6, 8, 12)
    ]
    ladders["loo-once"] = [Rung("K+1", _named(LooOnceMethod(), "loo-once"), plain)]
    ladders["newest"] = [Rung("0 calls", _named(NewestWinsMethod(), "newest"), plain)]
    ladders["llm-filter"] = [Rung("1 call", _named(LlmFilterMethod(), "llm-filter"), plain)]
    ladders["oracle"] = [Rung("ceiling", _named(TargetOracle(), "oracle"), plain)]
    ladders["none"] = [Rung("no clearance", _named(NoClearance(), "none"), plain)]
    if families is not None:
        ladders = {k: v for k, v in ladders.items() if k in families}
    return ladders


def _point(label: str, outcomes: Sequence[CaseOutcome]) -> dict[str, Any]:
    summary = summarize(outcomes)
    row = {k: summary.get(k) for k in HEADLINE_METRICS}
    row["budget"] = label
    return row


def equal_calls(
    cases: Sequence[BenchCase],
    *,
    base: BenchSettings,
    ladders: dict[str, list[Rung]] | None = None,
    meclear_variants: dict[str, MeClearMethod] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """MeClear against every baseline at (at least) MeClear's model calls per case.

    Args:
        cases: The cases.
        base: The run's settings (its engine is MeClear's; its bootstrap the CIs').
        ladders: Each baseline's budgets (None: :func:`default_ladders`).
        meclear_variants: More MeClear configurations drawn as curve points (not matched).
        progress: Called with a line per rung.

    Returns:
        The document: ``results`` (the ``results.json`` of the fixed-budget run, the
        headline: per-method metrics with intervals, ``paired`` differences with
        MeClear), ``fixed_rungs`` (per baseline, the budget it runs at),
        ``results_per_case`` (the same for the per-case matching), ``matched_rungs``
        (per baseline, how many cases used each rung), ``choices`` (per baseline and case:
        [rung, its calls, MeClear's calls, whether it is the ladder's last]), ``curves``
        (per method, one point per rung) and the labels.
    """
    say = progress or (lambda _: None)
    settings = base.model_copy(update={"match_budget": False})
    ladders = ladders if ladders is not None else default_ladders(settings)
    ids = [c.case_id for c in cases]
    reference = MeClearMethod(settings.engine, name="meclear")
    ref_run = run_benchmark(cases, settings, methods=[reference])
    ref = {o.case_id: o for o in ref_run.outcomes["meclear"]}
    target = {cid: o.model_calls for cid, o in ref.items()}
    curves: dict[str, list[dict[str, Any]]] = {"meclear": [_point("default", list(ref.values()))]}
    say(f"meclear: {curves['meclear'][0]['model_calls_per_case']:.1f} calls / case")
    for label, method in (meclear_variants or {}).items():
        run = run_benchmark(cases, settings, methods=[method])
        curves.setdefault("meclear", []).append(_point(label, run.outcomes[method.name]))
    per_case: dict[str, dict[str, CaseOutcome]] = {"meclear": ref}
    used: dict[str, dict[str, int]] = {}
    choices: dict[str, dict[str, list[Any]]] = {}
    failures = list(ref_run.failures)
    mean_target = sum(target.values()) / len(target) if target else 0.0
    fixed_cases: dict[str, dict[str, CaseOutcome]] = {"meclear": ref}
    fixed_rungs: dict[str, str] = {}
    for family, rungs in ladders.items():
        chosen: dict[str, CaseOutcome] = {}
        counts: dict[str, int] = {}
        picked: dict[str, list[Any]] = {}
        for index, rung in enumerate(rungs):
            run = run_benchmark(cases, rung.settings, methods=[rung.method])
            failures += run.failures
            outcomes = run.outcomes.get(rung.method.name, [])
            curves.setdefault(family, []).append(_point(rung.label, outcomes))
            last = index == len(rungs) - 1
            matched = [o for o in outcomes if o.case_id in target]
            mean_calls = sum(o.model_calls for o in matched) / len(matched) if matched else 0.0
            if family not in fixed_rungs and (mean_calls >= mean_target or last):
                fixed_rungs[family] = rung.label
                fixed_cases[family] = {o.case_id: o for o in matched}
            for o in outcomes:
                if o.case_id in chosen or o.case_id not in target:
                    continue
                if o.model_calls >= target[o.case_id] or last:
                    chosen[o.case_id] = o
                    counts[rung.label] = counts.get(rung.label, 0) + 1
                    picked[o.case_id] = [rung.label, o.model_calls, target[o.case_id], last]
            say(f"{family} @ {rung.label}: {curves[family][-1]['model_calls_per_case']:.1f} calls")
        per_case[family] = chosen
        used[family] = counts
        choices[family] = picked
    methods = ["meclear", *ladders]
    named = settings.model_copy(update={"methods": tuple(methods)})
    run = assemble_run(named, ids, methods, per_case, failures=failures)
    fixed = assemble_run(named, ids, methods, fixed_cases, failures=failures)
    return {
        "simulated": True,
        "judge": str(settings.judge),
        "temperature": settings.temperature,
        "n_cases": len(run.outcomes.get("meclear", [])),
        "meclear_calls_per_case": mean_target,
        "results": build_results(fixed),
        "fixed_rungs": fixed_rungs,
        "results_per_case": build_results(run),
        "matched_rungs": used,
        "choices": choices,
        "curves": curves,
    }


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def equal_calls_table(doc: dict[str, Any], key: str = "results") -> str:
    """A table of each method at MeClear's calls, paired differences with MeClear.

    Args:
        doc: The :func:`equal_calls` document.
        key: ``results`` (fixed budgets: the headline) or ``results_per_case``.

    Returns:
        The Markdown table.
    """
    results = doc[key]
    lines = [
        "| method | E[recovery] | MeClear - method [95% CI] | evidence correct | Recovery "
        "(unseen) | Exact (flagged) | MeClear - method, Exact [95% CI] | deleted bg / case "
        "| harm | model calls / case |",
        "|" + "---|" * 10,
    ]
    paired = results.get("paired", {})

    def delta(name: str, metric: str) -> str:
        cell = paired.get(name, {}).get(metric)
        if not cell or cell.get("delta") is None:
            return "-"
        ci = cell.get("ci")
        text = f"{100 * cell['delta']:+.1f}"
        return text if not ci else f"{text} [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"

    for name, block in results["methods"].items():
        if block.get("status") != "ok":
            continue
        o = block["overall"]
        calls = o.get("model_calls_per_case")
        lines.append(
            f"| {name} | {_pct(o.get('expected_recovery'))} | {delta(name, 'expected_recovery')}"
            f" | {_pct(o.get('evidence_correct'))} | {_pct(o.get('recovery'))}"
            f" | {_pct(o.get('exact_match'))} | {delta(name, 'exact_match')}"
            f" | {o.get('cleared_extra_background') or 0:.3f} | {_pct(o.get('harm_rate'))}"
            f" | {0.0 if calls is None else calls:.1f} |"
        )
    return "\n".join(lines)


def write_equal_calls_figure(doc: dict[str, Any], path: str | Path) -> Path:
    """Quality against model calls per case, one curve per method (SIMULATED).

    Args:
        doc: The :func:`equal_calls` document.
        path: The PNG written.

    Returns:
        ``path``.
    """
    plt = load_pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, key, label in (
        (axes[0], "expected_recovery", "E[recovery] (%)"),
        (axes[1], "exact_match", "Exact, flagged set (%)"),
    ):
        for name, rows in doc["curves"].items():
            pts = sorted(
                (r["model_calls_per_case"] or 0.0, 100 * (r[key] or 0.0))
                for r in rows
                if r.get(key) is not None
            )
            if not pts:
                continue
            xs, ys = zip(*pts, strict=True)
            ax.plot(xs, ys, marker="o", label=name)
        ax.set_xlabel("model calls per case (agent + judge)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    label = doc.get("label", "SIMULATED")
    fig.suptitle(f"Quality versus model calls, every budget ({label}; judge {doc['judge']})")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
