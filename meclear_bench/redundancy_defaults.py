"""Should the redundancy settings be on by default? The ordinary benchmark (SIMULATED).

``python -m meclear_bench.cli.bench_redundancy_defaults --locomo DIR --split dev
--setting S --max-queries N --out OUT`` runs, on the same ordinary benchmark cases (the
``meclear bench-sweep`` case flags), the benchmark's MeClear configuration and the same with
each redundancy setting of issue 26 on: ``find_carriers``, ``answer_groups``,
``stops.unexplained=True``, ``clearance_scope="complete"``, all of them, and the default
checks off (``stops.cannot_answer=False``, ``answer_groups=False``,
``stops.unexplained=False``: what the defaults cost). The defaults are decided from this
table on the dev split (never test): a setting turns on by default when it buys quality for
its calls on the ordinary benchmark, not only on the heavy-redundancy set (``meclear
bench-redundancy``). Writes ``redundancy-defaults.json`` and ``redundancy-defaults.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from meclear_integrations.core import ClearanceConfig

from .methods.meclear import MeClearMethod
from .metrics import metric_value
from .runner import run_benchmark
from .settings import BenchSettings
from .variants import VARIANT_METRICS

__all__ = ["default_variants", "defaults_sweep"]


def default_variants(engine: ClearanceConfig) -> dict[str, ClearanceConfig]:
    """The configurations compared (module docstring).

    Args:
        engine: The benchmark's MeClear configuration (what a user gets).

    Returns:
        Label -> configuration.
    """

    def on(**update: Any) -> ClearanceConfig:
        return engine.updated(**update)

    return {
        "as configured": engine,
        "previous defaults (no checks)": on(
            stops={"cannot_answer": False, "unexplained": False}, answer_groups=False
        ),
        "cannot-answer check off": on(stops={"cannot_answer": False}),
        "answer_groups=False": on(answer_groups=False),
        "+ find_carriers": on(find_carriers=True),
        "+ answer_groups": on(answer_groups=True),
        "+ stops.unexplained=True": on(stops={"unexplained": True}),
        "stops.unexplained=False": on(stops={"unexplained": False}),
        "clearance_scope=complete": on(clearance_scope="complete"),
        "all on (complete)": on(
            clearance_scope="complete", answer_groups=True, stops={"unexplained": True}
        ),
    }


def defaults_sweep(cases: Sequence[Any], *, base: BenchSettings) -> dict[str, Any]:
    """Every configuration of :func:`default_variants` on ``cases`` (one run).

    Args:
        cases: The benchmark cases.
        base: The run's settings (its engine is the configuration compared).

    Returns:
        The document: rows per configuration with :data:`~.variants.VARIANT_METRICS`.
    """
    settings = base.model_copy(update={"bootstrap_replicates": 0, "match_budget": False})
    methods = [
        MeClearMethod(config, name=label) for label, config in default_variants(base.engine).items()
    ]
    run = run_benchmark(cases, settings, methods=methods)
    rows = {
        name: {metric: metric_value(outcomes, metric) for metric in VARIANT_METRICS}
        for name, outcomes in run.outcomes.items()
    }
    return {
        "simulated": True,
        "judge": str(settings.judge),
        "temperature": settings.temperature,
        "n_cases": len(next(iter(run.outcomes.values()), [])),
        "rows": rows,
    }
