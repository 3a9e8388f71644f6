"""Estimators as objects: a name, an instance with its own settings, "auto"."""

from __future__ import annotations

import json

import numpy as np
import pytest

from meclear_integrations.core import (
    AutoShapley,
    ClearanceConfig,
    ClearanceReport,
    ExactShapley,
    MeClearEngine,
    PermutationShapley,
)
from meclear_integrations.core.estimators import (
    BernsteinPermutationShapley,
    HierarchicalShapley,
    make_estimator,
)
from meclear_integrations.core.estimators.kernel import KernelShapley
from tests.support.games import CountingEvaluator, make_memories


def redundant(ids: frozenset[str]) -> float:
    """m0 answers; m1 and m2 each override it (redundant harm)."""
    return 1.0 if "m0" in ids and not ids & {"m1", "m2"} else 0.0


def comparable(report: ClearanceReport) -> dict[str, object]:
    """Everything a run decided and paid, without wall time and the config echo."""
    data = report.model_dump(mode="json")
    data.pop("config")
    data["cost"].pop("wall_seconds")
    return data


DEFAULTS = {
    "auto": AutoShapley(),
    "exact": ExactShapley(),
    "kernel": KernelShapley(),
    "permutation": PermutationShapley(),
    "bernstein": BernsteinPermutationShapley(),
    "hierarchical": HierarchicalShapley(fallback=KernelShapley()),
}


@pytest.mark.parametrize("name", sorted(DEFAULTS))
@pytest.mark.parametrize("preset", ["default", "paper"])
@pytest.mark.parametrize("k", [4, 8])
def test_a_name_is_its_estimator_with_default_settings(name: str, preset: str, k: int) -> None:
    by_name = ClearanceConfig.preset(preset, estimator=name)  # type: ignore[arg-type]
    by_object = ClearanceConfig.preset(preset, estimator=DEFAULTS[name])  # type: ignore[arg-type]
    named = MeClearEngine(by_name).clear(make_memories(k), CountingEvaluator(redundant))
    instance = MeClearEngine(by_object).clear(make_memories(k), CountingEvaluator(redundant))
    assert comparable(named) == comparable(instance)


def test_an_instance_brings_its_own_settings() -> None:
    k = 5
    counts = {}
    for per_memory in (3.0, 6.0):
        config = ClearanceConfig(
            estimator=KernelShapley(coalitions_per_memory=per_memory), early_exit=False
        )
        report = MeClearEngine(config).clear(make_memories(k), CountingEvaluator(redundant))
        counts[per_memory] = report.cost.coalitions
    assert counts[3.0] < counts[6.0]
    estimator = make_estimator(
        ClearanceConfig(estimator=PermutationShapley(permutations=7)), np.random.default_rng(0), k
    )
    assert isinstance(estimator, PermutationShapley)
    assert len(estimator.plan(k)) == 7 * (k + 1)


def test_auto_settings_choose_the_estimator() -> None:
    config = ClearanceConfig(estimator=AutoShapley(exact_budget=16))
    report = MeClearEngine(config).clear(make_memories(5), CountingEvaluator(redundant))
    assert report.estimator == "kernel"
    # the default enumerates up to K = 5 (2^5 <= 32), KernelSHAP from 6 memories
    default = MeClearEngine(ClearanceConfig()).clear(make_memories(5), CountingEvaluator(redundant))
    assert default.estimator == "exact"
    six = MeClearEngine(ClearanceConfig()).clear(make_memories(6), CountingEvaluator(redundant))
    assert six.estimator == "kernel"


def test_an_estimator_seed_overrides_the_run_seed() -> None:
    def psi(config_seed: int, estimator_seed: int | None) -> list[float]:
        config = ClearanceConfig(
            estimator=PermutationShapley(permutations=3, seed=estimator_seed),
            seed=config_seed,
            trials=1,
        )
        report = MeClearEngine(config).clear(make_memories(6), CountingEvaluator(redundant))
        return [a.shapley for a in report.attributions]

    assert psi(1, 42) == psi(2, 42)
    assert psi(1, None) != psi(2, None)


def test_an_instance_config_serialises_with_its_settings() -> None:
    config = ClearanceConfig(estimator=PermutationShapley(permutations=64))
    dumped = json.loads(config.model_dump_json())
    assert dumped["estimator"] == {"name": "permutation", "permutations": 64, "seed": None}
    assert config.estimator_name == "permutation"
    assert ClearanceConfig().model_dump()["estimator"] == "auto"
    hash(config)  # the configuration stays hashable


@pytest.mark.parametrize("estimator", [*DEFAULTS.values(), AutoShapley(exact_budget=32, seed=4)])
def test_a_configuration_round_trips_through_json(estimator: object) -> None:
    config = ClearanceConfig(estimator=estimator)  # type: ignore[arg-type]
    again = ClearanceConfig.model_validate_json(config.model_dump_json())
    assert again == config and hash(again) == hash(config)
    assert again.estimator is not estimator and again.estimator == estimator
    assert ClearanceConfig(estimator=PermutationShapley(permutations=8)) != ClearanceConfig(
        estimator=PermutationShapley(permutations=9)
    )


def test_moved_settings_say_where_they_went() -> None:
    for name, hint in [
        ("exact_budget", "AutoShapley"),
        ("coalitions_per_memory", "KernelShapley"),
        ("stopping", "bernstein"),
    ]:
        with pytest.raises(ValueError, match=hint):
            ClearanceConfig(**{name: 1})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_table_fraction"):
        KernelShapley(max_table_fraction=0.0)
    with pytest.raises(ValueError, match="exact_budget"):
        AutoShapley(exact_budget=0)
