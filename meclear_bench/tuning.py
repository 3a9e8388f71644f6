"""Dev tuning of every method alike: ``meclear bench-sweep tune`` (SIMULATED).

One grid for every baseline (:func:`tuning_grid`): each baseline's own knobs, and for every
baseline that verifies its candidates (LOO, ContextCite, ProxySPEX under ``--clearance
verified``) the verification settings, recovery rate and trial cap. MeClear is not tuned
here: it runs the package default (``ClearanceConfig()``, the run's engine), whose values
were decided on dev by ``meclear bench-sweep variants``; it runs once, beside the
baselines, and fixes the coalitions they are matched to. Methods with nothing to
tune (the LLM filter: one call; newest-wins: 0 calls; LOO at K + 1 calls) are run once and
reported beside them. Each method is searched by :func:`~.tune_grid.search` (group by group,
grid edges widened) on one objective: the mean over the objective settings (noisy and
persistent: temperature 0.2, 5% judge errors per call or repeated) of the expected recovery
(exact in the simulated world), among the settings that delete at most
``max_deleted_background`` non-target memories per case in each setting; ties within
0.1 pp go to the fewer model calls. Every ablation baseline gets, per case, as many
distinct coalitions as the package default evaluated.
The chosen settings are re-run in the check settings (deterministic) and reported.
:func:`~.tuned_module.render_tuned_module` writes the result as :mod:`.tuned`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .cases import BenchCase
from .methods.base import BenchMethod
from .methods.contextcite import ContextCiteMethod
from .methods.llm_filter import LlmFilterMethod
from .methods.loo import LooMethod, LooOnceMethod
from .methods.meclear import MeClearMethod
from .methods.newest import NewestWinsMethod
from .methods.proxyspex import ProxySpexMethod
from .results import build_results
from .runner import run_benchmark
from .settings import BenchSettings, SurrogateSettings
from .sweeps import STANDARD_SETTINGS, standard, summary
from .tune_grid import Axis, Point, nested, search
from .tuned import TUNED_VERIFICATION

__all__ = [
    "CHECK_SETTINGS",
    "FIXED_METHODS",
    "OBJECTIVE_SETTINGS",
    "TuningGrid",
    "baseline_settings",
    "tune",
    "tuning_grid",
]

OBJECTIVE_SETTINGS = ("noisy", "persistent")
"""The settings the objective averages over."""
CHECK_SETTINGS = ("deterministic",)
"""The settings every chosen configuration is re-run in and reported (not optimised)."""
FIXED_METHODS: dict[str, Callable[[], BenchMethod]] = {
    "loo-once": LooOnceMethod,
    "llm-filter": LlmFilterMethod,
    "newest": NewestWinsMethod,
}
"""Baselines with nothing to tune: run once, reported beside the tuned ones."""
TuningGrid = dict[str, tuple[dict[str, Any], list[list[Axis]]]]
"""Method -> (its starting values, its axis groups)."""

_VERIFY_RATE = (0.2, 0.3, 0.5)
_VERIFY_CAP = (12, 16)


def _verification_axes() -> list[Axis]:
    return [
        Axis("verification.recovery_rate", _VERIFY_RATE, low=0.05, high=1.0),
        Axis("verification.max_trials", _VERIFY_CAP, low=2, high=100, integer=True),
    ]


def _start_verification(values: dict[str, Any]) -> dict[str, Any]:
    return {f"verification.{k}": v for k, v in values.items()}


def tuning_grid(baselines: dict[str, dict[str, Any]] | None = None) -> TuningGrid:
    """Every tuned baseline's starting point and axis groups.

    Args:
        baselines: Each baseline's current settings (None: the benchmark's defaults).

    Returns:
        Method -> (start, groups).
    """
    defaults = BenchSettings()
    start_b = baselines or {
        "loo": {"tolerance": defaults.loo_tolerance},
        "contextcite": defaults.contextcite.model_dump(),
        "proxyspex": defaults.proxyspex.model_dump(),
    }
    grid: TuningGrid = {
        "loo": (
            {**start_b["loo"], **_start_verification(TUNED_VERIFICATION["loo"])},
            [[Axis("tolerance", (0.0, 0.02, 0.05, 0.1), low=0.0, high=1.0)], _verification_axes()],
        ),
    }
    for name in ("contextcite", "proxyspex"):
        grid[name] = (
            {**start_b[name], **_start_verification(TUNED_VERIFICATION[name])},
            [
                [
                    Axis("flag_rule", ("tolerance", "relative")),
                    Axis("tolerance", (0.0, 0.05, 0.1), low=0.0, high=1.0),
                    Axis("alpha", (0.001, 0.01), low=1e-5, high=1.0, scale="log"),
                ],
                _verification_axes(),
            ],
        )
    return grid


def _score(
    values: dict[str, Any], points: dict[str, dict[str, Any]], bound: float, metric: str
) -> Point:
    background = max((p["cleared_extra_background"] or 0.0) for p in points.values())
    ok = background <= bound

    def value(p: dict[str, Any]) -> float:
        got = p.get(metric)
        return float(got if got is not None else p.get("recovery") or 0.0)

    objective = sum(value(p) for p in points.values()) / len(points)
    calls = sum(p["model_calls_per_case"] or 0.0 for p in points.values()) / len(points)
    return Point(values, points, ok, objective, calls, background)


def _line(p: Point) -> str:
    over = "" if p.admissible else " (over the bound)"
    return (
        f"{100 * p.objective:.1f} at {p.model_calls:.1f} calls, "
        f"deleted background {p.background:.3f}{over}"
    )


def _row(p: Point) -> dict[str, Any]:
    return {
        "settings": p.values,
        "points": p.points,
        "admissible": p.admissible,
        "objective": p.objective,
        "model_calls": p.model_calls,
    }


def _baseline(name: str) -> BenchMethod:
    makers: dict[str, Callable[[], BenchMethod]] = {
        "loo": LooMethod,
        "contextcite": ContextCiteMethod,
        "proxyspex": ProxySpexMethod,
        **FIXED_METHODS,
    }
    return makers[name]()


def baseline_settings(base: BenchSettings, name: str, values: dict[str, Any]) -> BenchSettings:
    """``base`` with a baseline's tuned values applied.

    Args:
        base: The run's settings.
        name: ``loo``, ``contextcite`` or ``proxyspex``.
        values: The baseline's flat values (its knobs and ``verification.*``).

    Returns:
        The settings.
    """
    values = nested(values)
    verification = {**base.verification, name: dict(values.pop("verification", {}))}
    update: dict[str, Any] = {"verification": verification}
    if name == "loo":
        update["loo_tolerance"] = values["tolerance"]
    else:
        update[name] = SurrogateSettings(**values)
    return base.model_copy(update=update)


def tune(
    cases: Sequence[BenchCase],
    *,
    base: BenchSettings,
    settings: Iterable[str] = OBJECTIVE_SETTINGS,
    check: Iterable[str] = CHECK_SETTINGS,
    max_deleted_background: float = 0.05,
    metric: str = "expected_recovery",
    grid: TuningGrid | None = None,
    fixed_methods: Iterable[str] = tuple(FIXED_METHODS),
    passes: int = 1,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Choose every baseline's tunable settings on ``cases`` (the dev split).

    See the module docstring for the grid and the objective.

    Args:
        cases: The dev cases.
        base: The settings the grid starts from (its engine: the package default).
        settings: The standard settings the objective averages over.
        check: The standard settings the choices are re-run in.
        max_deleted_background: The most deleted background memories per case.
        metric: The objective's metric (falls back to unseen-trial recovery when absent).
        grid: Each baseline's start and axes (None: :func:`tuning_grid`).
        fixed_methods: Baselines run once (no knobs).
        passes: The most coordinate-search passes per method (1: each group once, in
            order: the own knobs at the current verification settings, then the
            verification settings at the chosen knobs).
        progress: Called with a line per grid point.

    Returns:
        Every evaluated point, each method's choice and its check figures.
    """
    names = list(settings)
    checks = [c for c in check if c not in names]
    unknown = [s for s in [*names, *checks] if s not in STANDARD_SETTINGS]
    if unknown:
        raise ValueError(f"unknown settings {unknown}; known: {', '.join(STANDARD_SETTINGS)}")
    say = progress or (lambda _: None)
    base = base.model_copy(update={"bootstrap_replicates": 0})
    grid = grid if grid is not None else tuning_grid()

    def run(
        name: str, method: BenchMethod, run_settings: BenchSettings, setting: str, matched: Any
    ) -> tuple[dict[str, Any], dict[str, int]]:
        only = standard(run_settings, setting).model_copy(update={"methods": (method.name,)})
        result = run_benchmark(cases, only, methods=[method], matched=matched)
        per_case = {o.case_id: o.coalitions for o in result.outcomes.get(method.name, [])}
        return summary(build_results(result), method.name), per_case

    out: dict[str, Any] = {
        "simulated": True,
        "settings": names,
        "check_settings": checks,
        "metric": metric,
        "objective": f"mean {metric} over {', '.join(names)}; deleted background "
        f"<= {max_deleted_background} per case in each; ties within 0.1 pp: fewer model calls",
        "max_deleted_background": max_deleted_background,
        "n_cases": len(cases),
        "meclear_engine": repr(base.engine.estimator),
        "methods": {},
    }

    def record(name: str, result: Any, check_of: Callable[[dict[str, Any], str], Point]) -> None:
        chosen = result.rows[result.chosen]
        block = {
            "rows": [_row(p) for p in result.rows],
            "chosen": result.chosen,
            "axes": {k: list(v) for k, v in result.axes.items()},
            "widened": result.widened,
            "check": {c: check_of(chosen.values, c).points[c] for c in checks},
        }
        out["methods"][name] = block
        say(f"{name}: chose {chosen.values} ({100 * chosen.objective:.1f})")

    # MeClear first, as the package default: the ablation baselines are matched to its
    # coalitions
    me_points: dict[str, dict[str, Any]] = {}
    matched: dict[str, dict[str, int]] = {}
    for setting in [*names, *checks]:
        method = MeClearMethod(base.engine, name="meclear")
        me_points[setting], matched[setting] = run("meclear", method, base, setting, None)
    me = _score({}, {s: me_points[s] for s in names}, max_deleted_background, metric)
    out["methods"]["meclear"] = {
        "rows": [_row(me)],
        "chosen": 0,
        "axes": {},
        "widened": [],
        "check": {c: me_points[c] for c in checks},
    }
    say(f"meclear (the package default): {_line(me)}")
    tuned_base = base

    for name, (start, groups) in grid.items():

        def evaluate(
            values: dict[str, Any], where: Sequence[str] = names, name: str = name
        ) -> Point:
            run_settings = baseline_settings(tuned_base, name, values)
            points = {
                s: run(name, _baseline(name), run_settings, s, matched.get(s))[0] for s in where
            }
            p = _score(values, points, max_deleted_background, metric)
            if list(where) == names:
                say(f"{name} {values}: {_line(p)}")
            return p

        result = search(start, groups, evaluate, passes=passes)

        def check_of(
            values: dict[str, Any], setting: str, evaluate: Callable[..., Point] = evaluate
        ) -> Point:
            return evaluate(values, [setting])

        record(name, result, check_of)

    for name in fixed_methods:
        points = {s: run(name, _baseline(name), tuned_base, s, None)[0] for s in [*names, *checks]}
        p = _score({}, {s: points[s] for s in names}, max_deleted_background, metric)
        out["methods"][name] = {
            "rows": [_row(p)],
            "chosen": 0,
            "axes": {},
            "widened": [],
            "check": {c: points[c] for c in checks},
        }
        say(f"{name} (no knobs): {100 * p.objective:.1f} at {p.model_calls:.1f} calls")
    out["chosen"] = {
        name: block["rows"][block["chosen"]]["settings"] for name, block in out["methods"].items()
    }
    return out
