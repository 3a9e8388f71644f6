"""Exact enumeration with intervals from the trials' error (``error_model="pooled"``)."""

from __future__ import annotations

import numpy as np
import pytest

from meclear_integrations.core import ClearanceConfig, ExactShapley, MeClearEngine, Memory
from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.core.estimators import AutoShapley, estimator_from_settings
from meclear_integrations.core.estimators.exact import exact_shapley, shapley_sigma
from meclear_integrations.core.game import CoalitionGame


def game(k: int, scores: dict[int, tuple[float, ...]]) -> CoalitionGame:
    g = CoalitionGame(
        context=tuple(Memory(id=f"m{i}", content=f"t{i}") for i in range(k)), trials=1
    )
    for c in range(1 << k):
        g.store(c, scores.get(c, (float(c & 1),)))  # memory 0 decides, one trial each
    return g


def fitted(estimator: ExactShapley, k: int) -> ExactShapley:
    fresh = estimator.for_context(k, config=ClearanceConfig(), rng=np.random.default_rng(0))
    assert isinstance(fresh, ExactShapley)
    return fresh


def test_agreeing_trials_keep_zero_width_intervals() -> None:
    g = game(3, {0b111: (1.0, 1.0, 1.0), 0b000: (0.0, 0.0)})
    est = fitted(ExactShapley(error_model="pooled"), 3).estimate(g)
    assert np.allclose(est.lower, est.values) and np.allclose(est.upper, est.values)
    assert est.values.tolist() == pytest.approx([1.0, 0.0, 0.0])


def test_disagreeing_trials_widen_every_interval_by_the_pooled_variance() -> None:
    k = 3
    g = game(k, {0b111: (1.0, 0.0, 1.0, 1.0)})  # the full context's trials disagree
    est = fitted(ExactShapley(error_model="pooled", z=2.0), k).estimate(g)
    pooled = float(np.var((1.0, 0.0, 1.0, 1.0), ddof=1))
    variances = np.full(1 << k, pooled)
    variances[0b111] = pooled / 4  # four trials
    sigma = shapley_sigma(variances, k)
    table = np.array([g.value(c) for c in range(1 << k)])
    assert est.values == pytest.approx(exact_shapley(table, k))
    assert est.upper - est.values == pytest.approx(2.0 * sigma)
    assert (est.upper > est.values).all() and (est.lower < est.values).all()
    none = fitted(ExactShapley(), k).estimate(g)
    assert np.allclose(none.upper, none.values)  # the default is Eq. 3 as before


def test_noise_floor_and_z_from_the_run() -> None:
    k = 2
    est = fitted(ExactShapley(error_model="pooled", noise_floor=0.1), k).estimate(game(k, {}))
    var = 0.1 * 0.9
    w = 0.5  # K = 2: both sizes weigh 1/2
    sigma = np.sqrt(2 * 2 * w**2 * var)
    assert est.upper - est.values == pytest.approx(np.full(k, 1.6448536 * sigma), rel=1e-5)
    for bad in ({"error_model": "bayes"}, {"noise_floor": 0.7}, {"z": -1.0}):
        with pytest.raises(ConfigurationError):
            ExactShapley(**bad)  # type: ignore[arg-type]


def test_settings_round_trip_and_auto_passes_the_error_model() -> None:
    auto = AutoShapley(
        exact_budget=32, exact_error_model="pooled", exact_noise_floor=0.05, exact_z=1.0
    )
    assert estimator_from_settings(auto.settings()) == auto
    chosen = auto.for_context(5, config=ClearanceConfig(), rng=np.random.default_rng(0))
    assert isinstance(chosen, ExactShapley) and chosen.error_model == "pooled"
    assert (chosen.noise_floor, chosen.z) == (0.05, 1.0)
    exact = ExactShapley(error_model="pooled", noise_floor=0.02, z=1.0)
    assert estimator_from_settings(exact.settings()).settings() == exact.settings()


@pytest.mark.parametrize("rule", ["interval", "auto"])
def test_interval_rule_with_a_noise_floor_keeps_a_weak_estimate_as_a_fallback(rule: str) -> None:
    context = [Memory(id=i, content=i) for i in ("good", "bad", "meh")]

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        ids = {m.id for m in coalition}
        return 1.0 if "good" in ids and "bad" not in ids else 0.0

    def run(floor: float) -> tuple[float, list[str]]:
        config = ClearanceConfig(
            estimator=ExactShapley(error_model="pooled", noise_floor=floor),
            harm_rule=rule,  # type: ignore[arg-type]
            harm_tolerance=0.02,
        )
        report = MeClearEngine(config).clear(context, evaluate)
        bad = next(a for a in report.attributions if a.memory_id == "bad")
        assert bad.harmful == (floor == 0.0 or "bad" in report.cleared_ids)
        assert bad.shapley == pytest.approx(-0.5)
        return bad.shapley_interval[1], report.cleared_ids

    assert run(0.0) == (pytest.approx(-0.5), ["bad"])
    upper, cleared = run(0.45)  # a very noisy judge: psi(bad) = -0.5 is no longer clear
    assert upper > 0 and cleared == ["bad"]  # not flagged, tried as a fallback and verified


def test_refinement_asks_more_trials_where_an_interval_holds_minus_tau() -> None:
    k = 3
    g = game(k, {0b111: (1.0, 0.0, 1.0, 1.0)})  # disagreeing trials: wide intervals
    est = fitted(ExactShapley(error_model="pooled", z=2.0, refine_rounds=1), k)
    wanted = dict(est.refine(g))
    assert wanted[0b000] == 2 and wanted[0b111] == 5  # one more trial each
    unsure = [i for i in range(k) if (1 << i) in wanted]
    assert unsure and all(wanted[0b111 & ~(1 << i)] == 2 for i in unsure)
    assert est.refine(g) == []  # one round only
    assert fitted(ExactShapley(error_model="pooled"), k).refine(g) == []  # off by default
    with pytest.raises(ConfigurationError):
        ExactShapley(refine_rounds=9)


def test_refinement_runs_inside_the_engine() -> None:
    context = [Memory(id=i, content=i) for i in ("good", "bad", "meh")]
    seen: list[tuple[str, ...]] = []

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        ids = tuple(m.id for m in coalition)
        seen.append(ids)
        return 1.0 if "good" in ids and "bad" not in ids else 0.0

    config = ClearanceConfig(
        estimator=ExactShapley(error_model="pooled", noise_floor=0.2, refine_rounds=2),
        harm_tolerance=0.02,
    )
    report = MeClearEngine(config).clear(context, evaluate)
    assert report.cleared_ids == ["bad"]
    assert seen.count(("meh",)) >= 2  # the unsure memory's singleton got more trials
    assert seen.count(("good", "bad")) >= 2  # and so did the context without it
    assert seen.count(("bad",)) == 1  # a memory whose interval is clear of -tau did not
