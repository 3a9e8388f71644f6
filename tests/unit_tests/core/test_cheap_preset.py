"""The cheap preset: its settings, how it is named, and what it saves on a faulty query."""

from __future__ import annotations

import typing

import pytest

from meclear_integrations.core import (
    AutoShapley,
    ClearanceConfig,
    ConfigurationError,
    MeClearEngine,
)
from meclear_integrations.core.config import PresetName
from meclear_integrations.core.estimators.hierarchical import HierarchicalShapley
from meclear_integrations.simulation import redundant_harm_example

CHEAP = {"exact_budget": 16, "hierarchical_from": 5, "blocks": 4, "branching": 2}
"""The automatic estimator's settings the cheap preset changes (it keeps hierarchical
attribution at K = 5, where the default enumerates all 32 coalitions)."""


def _differences(config: ClearanceConfig) -> dict[str, object]:
    default = ClearanceConfig()
    return {
        name: getattr(config, name)
        for name in ClearanceConfig.model_fields
        if getattr(config, name) != getattr(default, name)
    }


def _estimator_differences(estimator: object) -> dict[str, object]:
    assert isinstance(estimator, AutoShapley)
    default = AutoShapley().settings()
    return {k: v for k, v in estimator.settings().items() if default[k] != v}


def test_cheap_is_the_default_with_a_smaller_hierarchical_first_level() -> None:
    cheap, default = ClearanceConfig.cheap(), ClearanceConfig()
    assert list(_differences(cheap)) == ["estimator"]
    assert _estimator_differences(cheap.estimator) == CHEAP
    # everything that decides safety stays the default's
    for name in ("early_exit", "verification", "budget", "failure", "trials"):
        assert getattr(cheap, name) == getattr(default, name)


def test_preset_names_and_overrides() -> None:
    assert "cheap" in typing.get_args(PresetName)
    assert ClearanceConfig.preset("cheap") == ClearanceConfig.cheap()
    assert ClearanceConfig.preset("cheap", seed=7).seed == 7
    overridden = ClearanceConfig.cheap(
        estimator=AutoShapley(**{**CHEAP, "blocks": 3}), budget={"max_concurrency": 2}
    )
    assert _estimator_differences(overridden.estimator) == {**CHEAP, "blocks": 3}
    assert overridden.budget.max_concurrency == 2
    # the estimator's names keep the preset's hierarchical settings
    assert ClearanceConfig.cheap(estimator="auto") == ClearanceConfig.cheap()
    hierarchical = ClearanceConfig.cheap(estimator="hierarchical").estimator
    assert isinstance(hierarchical, HierarchicalShapley)
    assert (hierarchical.n_blocks, hierarchical.branching) == (4, 2)
    with pytest.raises(ConfigurationError, match="'paper', 'default' or 'cheap'"):
        ClearanceConfig.preset("cheapest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"`blocks` moved: use `estimator=AutoShapley\(blocks"):
        ClearanceConfig.cheap(block=3)  # a typo is named, not ignored


def test_cheap_clears_the_redundant_pair_with_fewer_calls() -> None:
    """K=6, two paraphrased faults that mask each other: the default attributes by
    KernelSHAP (K < 7), the cheap preset hierarchically; both verify the same clearance."""
    case = redundant_harm_example()
    reports = {
        name: MeClearEngine(config).clear(case.memories, case.evaluator())
        for name, config in (("default", ClearanceConfig()), ("cheap", ClearanceConfig.cheap()))
    }
    for report in reports.values():
        assert report.status == "complete" and report.recovered
        assert sorted(report.cleared_ids) == sorted(case.targets)
    assert reports["cheap"].cost.coalitions < reports["default"].cost.coalitions
    assert reports["cheap"].cost.evaluator_calls < reports["default"].cost.evaluator_calls
