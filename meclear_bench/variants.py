"""Do MeClear's costly parts earn their calls? Engine variants side by side on dev (SIMULATED).

``meclear bench-sweep variants --locomo DIR --split dev --setting S`` runs, on the same
cases and in one run, the benchmark's MeClear configuration and the variants of
:func:`meclear_variants`: without escalation, nested instead of the minimal-subset search,
both off, the interval flag rule over exact enumeration with intervals from the trials'
error (``error_model="pooled"``, noise floor 0.02, z = 1), two trials on every
coalition, and two rounds of extra trials where an interval holds -tau
(``exact_refine_rounds=2``). The benchmark's defaults (:mod:`.tuned`) were chosen from this
table on the dev split in the deterministic, noisy and persistent settings: a part stays on
when it raises expected recovery or keeps deleted background under 0.05 per case for its calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from meclear_integrations.core import AutoShapley, ClearanceConfig
from meclear_integrations.core.config import TableEvidence
from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.core.surrogate import SurrogateCandidates

from .cases import BenchCase
from .methods.base import BenchMethod
from .methods.meclear import MeClearMethod
from .methods.registry import METHOD_FACTORIES, register_method
from .metrics import metric_value
from .runner import run_benchmark
from .settings import BenchSettings
from .tuned import INTERVAL_ESTIMATOR, INTERVAL_EVIDENCE

__all__ = [
    "VARIANT_METRICS",
    "meclear_variants",
    "surrogate_method",
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


def meclear_variants(engine: ClearanceConfig) -> dict[str, ClearanceConfig]:
    """The variants compared with ``engine`` (module docstring).

    Args:
        engine: The benchmark's MeClear configuration.

    Returns:
        Label -> configuration.
    """
    interval: dict[str, object] = {
        "estimator": INTERVAL_ESTIMATOR,
        "table_evidence": INTERVAL_EVIDENCE,
        "harm_rule": "auto",
    }
    point: dict[str, object] = {
        "estimator": AutoShapley(exact_budget=32),
        "table_evidence": TableEvidence(),
        "harm_rule": "threshold",
    }
    return {
        "as configured": engine,
        "point tau": engine.updated(**point),
        "point tau, no escalation": engine.updated(**point, escalation=False),
        "point tau, nested": engine.updated(**point, clearance="nested"),
        "interval": engine.updated(**interval),
        "interval, no escalation": engine.updated(**interval, escalation=False),
        "interval, nested": engine.updated(**interval, clearance="nested"),
        "interval, T = 2 everywhere": engine.updated(**interval, adaptive_trials=False, trials=2),
        "interval, 2 refinement rounds": engine.updated(
            estimator=AutoShapley(
                exact_budget=32,
                exact_error_model="pooled",
                exact_noise_floor=0.02,
                exact_z=1.0,
                exact_refine_rounds=2,
            ),
            table_evidence=TableEvidence(),
            harm_rule="auto",
        ),
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


def surrogate_method(label: str, preset: str | None, settings: BenchSettings) -> BenchMethod:
    """``meclear-surrogate[:PRESET]``: ``meclear`` with the surrogate candidate source on.

    The same engine as ``meclear`` (or ``meclear:PRESET``) with
    ``Verification.surrogate = SurrogateCandidates()`` (``core.surrogate``: Lasso on the
    coalition table already evaluated, candidates verified like any other). Registered
    when this module is imported (``meclear_bench.variants``).

    Args:
        label: The method's name in results.
        preset: An engine preset, or None for the run's configuration.
        settings: The run's settings.

    Returns:
        The method.
    """
    base = METHOD_FACTORIES["meclear"](label, preset, settings)
    if not isinstance(base, MeClearMethod):  # ``meclear`` was replaced by register_method
        raise ConfigurationError(f"meclear-surrogate needs the MeClear method, got {base!r}")
    config = base.config
    verification = config.verification.model_copy(update={"surrogate": SurrogateCandidates()})
    return MeClearMethod(config.updated(verification=verification), name=label)


register_method("meclear-surrogate", surrogate_method)
