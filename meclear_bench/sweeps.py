"""Benchmark sweeps: quality versus cost, the L sensitivity, judge signals.

Every sweep runs :func:`~.runner.run_benchmark` on one case set for a grid of settings and
returns a JSON-able document (SIMULATED figures):

- the dev tuning of every method is :func:`.tuning.tune` (it uses :func:`standard` and
  :func:`summary`);
- :func:`budget_sweep`: recovery, Exact (flagged set) and model calls per case for each
  method over a budget grid (MeClear: attribution coalitions; surrogates: distinct
  ablations), for the quality-versus-cost curve.
- :func:`permutation_sweep`: the paper's configuration at L = 4, 8, 16 (its Fig. 9).
- :func:`judge_sweep`: every success signal of :mod:`~meclear_integrations.simulation.
  judging` for MeClear and no clearance: recovery, accuracy against no clearance (paired
  cluster-bootstrap interval), harm rate, model calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from meclear_integrations.core import ClearanceConfig, PermutationShapley
from meclear_integrations.core.estimators.kernel import KernelShapley
from meclear_integrations.simulation import JudgeSignal

from .cases import BenchCase
from .methods.base import BenchMethod
from .methods.contextcite import ContextCiteMethod
from .methods.loo import LooMethod
from .methods.meclear import MeClearMethod
from .methods.none import NoClearance
from .methods.proxyspex import ProxySpexMethod
from .methods.targets import TargetOracle
from .results import build_results
from .runner import run_benchmark
from .settings import BenchSettings

__all__ = [
    "STANDARD_SETTINGS",
    "budget_sweep",
    "judge_sweep",
    "permutation_sweep",
    "standard",
    "summary",
]

STANDARD_SETTINGS: dict[str, dict[str, Any]] = {
    "deterministic": {"temperature": None, "judge": JudgeSignal()},
    "noisy": {"temperature": 0.2, "judge": JudgeSignal(kind="noisy", level=0.05)},
    "persistent": {"temperature": 0.2, "judge": JudgeSignal(kind="persistent", level=0.05)},
    "mixed": {
        "temperature": 0.2,
        "judge": JudgeSignal(kind="mixed", level=0.05, per_call=0.05),
    },
}
"""The standard settings every headline figure is reported in (world temperature, judge)."""

_HEADLINE = (
    "recovery",
    "expected_recovery",
    "evidence_correct",
    "exact_match",
    "deleted_exact",
    "complete_recall",
    "recall_at_m",
    "extra_background",
    "cleared_extra_background",
    "accuracy",
    "accuracy_gain",
    "harm_rate",
    "unverified_rate",
    "model_calls_per_case",
    "coalitions_per_case",
    "evaluator_calls_per_case",
)

Progress = Callable[[str], None]


def standard(base: BenchSettings, setting: str) -> BenchSettings:
    """``base`` in one of :data:`STANDARD_SETTINGS`.

    Args:
        base: The settings.
        setting: A name in :data:`STANDARD_SETTINGS`.

    Returns:
        The settings in that standard setting.
    """
    return base.model_copy(update=STANDARD_SETTINGS[setting])


def summary(results: dict[str, Any], name: str) -> dict[str, Any]:
    """One method's headline figures (and intervals) from a ``results.json`` document.

    Args:
        results: The run's results.
        name: The method.

    Returns:
        The figures of :data:`_HEADLINE` and the intervals of recovery, accuracy gain, harm.
    """
    block = results["methods"][name]
    out = {k: block["overall"].get(k) for k in _HEADLINE}
    out["ci"] = {k: block["ci"].get(k) for k in ("recovery", "accuracy_gain", "harm_rate")}
    return out


def _run(
    cases: Sequence[BenchCase],
    settings: BenchSettings,
    methods: Sequence[BenchMethod],
    matched: dict[str, int] | None = None,
) -> tuple[dict[str, Any], dict[str, int]]:
    """Results of one run and the per-case coalitions of its first MeClear method."""
    run = run_benchmark(cases, settings, methods=methods, matched=matched)
    results = build_results(run)
    reference = next((m.name for m in methods if isinstance(m, MeClearMethod)), None)
    coalitions = {o.case_id: o.coalitions for o in run.outcomes[reference]} if reference else {}
    return results, coalitions


def _label(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "default"


def budget_sweep(
    cases: Sequence[BenchCase],
    *,
    base: BenchSettings,
    meclear_budgets: Sequence[float] = (2.5, 3.0, 4.0, 5.0),
    surrogate_budgets: Sequence[int] = (8, 12, 16, 24, 32),
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Quality versus model calls per case.

    MeClear: paired KernelSHAP with ``coalitions_per_memory`` in ``meclear_budgets`` and exact
    enumeration; ContextCite and ProxySPEX: ``surrogate_budgets`` distinct ablations; LOO, the
    oracle and no clearance: one point each.

    Args:
        cases: The cases.
        base: The settings.
        meclear_budgets: MeClear's ``coalitions_per_memory`` values.
        surrogate_budgets: ContextCite's and ProxySPEX's ablation counts.
        progress: Called with a line per point.

    Returns:
        The sweep's document (points per method).
    """
    say = progress or (lambda _: None)
    settings = base.model_copy(update={"bootstrap_replicates": 0, "match_budget": False})
    curves: dict[str, list[dict[str, Any]]] = {}

    def point(method: BenchMethod, label: str, budget: float, run_settings: BenchSettings) -> None:
        results, _ = _run(cases, run_settings, [method])
        row = summary(results, method.name)
        row["budget"] = budget
        curves.setdefault(label, []).append(row)
        say(f"{label} @ {budget}: recovery {100 * (row['recovery'] or 0):.1f}")

    engine = base.engine
    for per_memory in meclear_budgets:
        config = engine.model_copy(
            update={"estimator": KernelShapley(coalitions_per_memory=per_memory)}
        )
        point(MeClearMethod(config, name="meclear"), "meclear", per_memory, settings)
    exact = engine.model_copy(update={"estimator": "exact"})
    point(MeClearMethod(exact, name="meclear"), "meclear (exact)", 0, settings)
    for budget in surrogate_budgets:
        sized = settings.model_copy(update={"surrogate_budget": budget})
        point(ContextCiteMethod(), "contextcite", budget, sized)
        point(ProxySpexMethod(), "proxyspex", budget, sized)
    point(LooMethod(), "loo", 0, settings)
    point(TargetOracle(), "oracle", 0, settings)
    point(NoClearance(), "none", 0, settings)
    return {
        "simulated": True,
        "judge": str(settings.judge),
        "temperature": settings.temperature,
        "n_cases": len(cases),
        "curves": curves,
    }


def permutation_sweep(
    cases: Sequence[BenchCase],
    *,
    base: BenchSettings,
    permutations: Sequence[int] = (4, 8, 16),
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Metrics against the number of permutations L (the paper's Fig. 9).

    The paper's configuration (``ClearanceConfig.paper()``) at each L, and the default
    configuration's permutation estimator at the same L.

    Args:
        cases: The cases.
        base: The settings.
        permutations: The values of L.
        progress: Called with a line per point.

    Returns:
        The sweep's document (one row per preset and L).
    """
    say = progress or (lambda _: None)
    settings = base.model_copy(update={"bootstrap_replicates": min(base.bootstrap_replicates, 500)})
    rows = []
    for preset in ("paper", "default"):
        for count in permutations:
            extra: dict[str, Any] = {
                "estimator": PermutationShapley(permutations=count),
                "seed": base.engine.seed,
            }
            config = ClearanceConfig.preset(preset, **extra)
            results, _ = _run(cases, settings, [MeClearMethod(config, name="meclear")])
            rows.append({"preset": preset, "permutations": count, **summary(results, "meclear")})
            say(f"{preset} L={count}: recall {100 * (rows[-1]['recall_at_m'] or 0):.1f}")
    return {
        "simulated": True,
        "judge": str(settings.judge),
        "temperature": settings.temperature,
        "n_cases": len(cases),
        "rows": rows,
    }


JUDGE_SIGNALS_MEASURED = (
    "reference",
    "full:1",
    "full:0.7",
    "full:0.5",
    "noisy:0.05",
    "noisy:0.1",
    "noisy:0.2",
    "coalition",
)
"""The signals of the "Without a reference answer" table."""


def judge_sweep(
    cases: Sequence[BenchCase],
    *,
    base: BenchSettings,
    signals: Sequence[str] = JUDGE_SIGNALS_MEASURED,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """MeClear and no clearance under every success signal (reference-free ones included).

    Args:
        cases: The cases.
        base: The settings.
        signals: The success signals (``JudgeSignal.parse`` syntax).
        progress: Called with a line per finished signal.

    Returns:
        The sweep's document.
    """
    say = progress or (lambda _: None)
    rows = []
    for text in signals:
        settings = base.model_copy(
            update={"judge": JudgeSignal.parse(text), "methods": ("meclear", "none")}
        )
        methods = [MeClearMethod(base.engine, name="meclear"), NoClearance()]
        results, _ = _run(cases, settings, methods)
        clean = results["methods"]["meclear"]["by_structure"].get("clean")
        row = {
            "judge": text,
            **summary(results, "meclear"),
            "cleared_per_clean_case": clean["cleared_extra_background"] if clean else None,
        }
        rows.append(row)
        say(f"{text}: recovery {100 * (row['recovery'] or 0):.1f}")
    return {
        "simulated": True,
        "temperature": base.temperature,
        "n_cases": len(cases),
        "n_clean_cases": sum(1 for c in cases if not c.targets),
        "rows": rows,
    }
