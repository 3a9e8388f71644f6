"""Do the rules beyond the package default earn their calls? Engine variants on dev (SIMULATED).

``meclear bench-sweep variants --locomo DIR --split dev --k K --setting S --preset default``
runs, on the same cases and in one run, the automatic estimator as it was before this study
(KernelSHAP at K = 5) and with each rule the benchmark once ran on top of the package
default (:func:`meclear_variants`), and the package default as it is now: exact
enumeration up to K = 5 (``AutoShapley(exact_budget=32)``, KernelSHAP otherwise), then with
intervals from the trials' error (``error_model="pooled"``, noise floor 0.02, z = 1), the
residual evidence (``TableEvidence(residual_z=1.64)``), the answer-backed flags
(``TableEvidence(answer_flags=True)``, promotion at z = 0), the verification recovery rate
0.1 with a cap of 16 trials, and all of them together (the former benchmark-only
configuration, :data:`FORMER_BENCHMARK_RULES`); every row but the last two without the
surrogate candidates (``Verification.surrogate``), which the four estimator rules plus the
surrogate, the package default since issue 37, then add. A rule earns its calls when it raises
expected recovery at no more deleted background than the default and at least as much as a
baseline gains for the same extra calls; one that does becomes the package default, one
that does not is removed (``docs/benchmark/variants.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from meclear_integrations.core import AutoShapley, ClearanceConfig
from meclear_integrations.core.config import TableEvidence
from meclear_integrations.core.surrogate import SurrogateCandidates

from .cases import BenchCase
from .methods.meclear import MeClearMethod
from .metrics import metric_value
from .runner import run_benchmark
from .settings import BenchSettings

__all__ = [
    "FORMER_BENCHMARK_RULES",
    "VARIANT_METRICS",
    "meclear_variants",
    "variant_sweep",
    "variants_table",
]

VARIANT_METRICS = (
    "expected_recovery",
    "recovery",
    "evidence_correct",
    "exact_match",
    "deleted_exact",
    "cleared_extra_background",
    "harm_rate",
    "model_calls_per_case",
)
"""The columns of the variants table."""

_BEFORE: dict[str, Any] = {
    "exact_budget": 16,
    "exact_error_model": "none",
    "exact_noise_floor": 0.0,
    "exact_z": None,
}
"""The automatic estimator's settings before the dev study (KernelSHAP at K = 5)."""
_EXACT = {**_BEFORE, "exact_budget": 32}
_POOLED = {**_EXACT, "exact_error_model": "pooled", "exact_noise_floor": 0.02, "exact_z": 1.0}
_NO_EVIDENCE = TableEvidence(answer_flags=False, residual_z=None, answer_residual_z=None)
"""No table-evidence add-on (``ClearanceConfig.table_evidence``)."""
_RESIDUAL = TableEvidence(answer_flags=False, residual_z=1.64, answer_residual_z=None)
_ANSWERS = TableEvidence(answer_flags=True, residual_z=None, answer_residual_z=0.0)
_ALL = TableEvidence(answer_flags=True, residual_z=1.64, answer_residual_z=0.0)
_VERIFY = {"recovery_rate": 0.1, "max_trials": 16}

FORMER_BENCHMARK_RULES: dict[str, Any] = {
    "estimator": AutoShapley(**_POOLED),
    "verification": {**_VERIFY, "table_evidence": _ALL},
}
"""The configuration the benchmark's ``meclear`` method ran before it ran the package
default (``meclear_bench/tuned.py`` of 2026-12-01): every rule above. An ablation only,
never the headline."""


def meclear_variants(engine: ClearanceConfig) -> dict[str, ClearanceConfig]:
    """The variants compared on ``engine``'s other settings (module docstring).

    Every estimator is spelled out, so the table means the same whatever the automatic
    estimator's defaults are.

    Args:
        engine: The configuration the rules are added to (the package default).

    Returns:
        Label -> configuration.
    """

    def auto(
        settings: dict[str, Any], evidence: TableEvidence = _NO_EVIDENCE, **more: Any
    ) -> ClearanceConfig:
        verification = {
            "surrogate": None,  # the rows before the surrogate candidates became the default
            **more.pop("verification", {}),
            "table_evidence": evidence,
        }
        return engine.updated(estimator=AutoShapley(**settings), verification=verification, **more)

    return {
        "before (KernelSHAP at K = 5)": auto(_BEFORE),
        "+ exact to K = 5": auto(_EXACT),
        "+ exact, pooled intervals": auto(_POOLED),
        "+ exact, pooled, residual z 1.64": auto(_POOLED, _RESIDUAL),
        "+ exact, pooled, answer flags": auto(_POOLED, _ANSWERS),
        "+ exact, pooled, residual, answer flags": auto(_POOLED, _ALL),
        "+ recovery rate 0.1, cap 16": auto(_BEFORE, verification=_VERIFY),
        "former benchmark configuration": auto(_POOLED, _ALL, verification=_VERIFY),
        "+ exact, pooled, residual, answer flags, surrogate": auto(
            _POOLED, _ALL, verification={"surrogate": SurrogateCandidates()}
        ),
        "package default": engine,
    }


def variant_sweep(
    cases: Sequence[BenchCase],
    *,
    base: BenchSettings,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every variant on ``cases`` under ``base`` (one run, the same cases).

    Args:
        cases: The cases.
        base: The run's settings (its engine is the configuration compared).
        progress: Called once when the run is done.

    Returns:
        The document: rows per variant with :data:`VARIANT_METRICS`.
    """
    settings = base.model_copy(update={"bootstrap_replicates": 0, "match_budget": False})
    methods = [
        MeClearMethod(config, name=label) for label, config in meclear_variants(base.engine).items()
    ]
    run = run_benchmark(cases, settings, methods=methods)
    rows = {
        name: {metric: metric_value(outcomes, metric) for metric in VARIANT_METRICS}
        for name, outcomes in run.outcomes.items()
    }
    if progress is not None:
        progress(f"{len(methods)} variants on {len(cases)} cases")
    return {
        "simulated": True,
        "judge": str(settings.judge),
        "temperature": settings.temperature,
        "n_cases": len(next(iter(run.outcomes.values()), [])),
        "rows": rows,
    }


def variants_table(doc: dict[str, Any]) -> str:
    """The variants as a Markdown table (rates in %).

    Args:
        doc: The :func:`variant_sweep` document.

    Returns:
        The table.
    """
    lines = [
        "| variant | E[recovery] | Recovery | evidence correct | Exact (flagged) | Exact "
        "(deleted) | deleted bg / case | harm | model calls / case |",
        "|" + "---|" * 9,
    ]
    for name, row in doc["rows"].items():
        cells = [
            f"{100 * (row[m] or 0):.1f}"
            for m in (
                "expected_recovery",
                "recovery",
                "evidence_correct",
                "exact_match",
                "deleted_exact",
            )
        ]
        cells.append(f"{row['cleared_extra_background'] or 0:.3f}")
        cells.append(f"{100 * (row['harm_rate'] or 0):.1f}")
        cells.append(f"{row['model_calls_per_case'] or 0:.1f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
