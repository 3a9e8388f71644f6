"""The cheap preset: its settings, how it is named, and what it saves on a faulty query."""

from __future__ import annotations

import typing

import pytest

from meclear_integrations.core import ClearanceConfig, ConfigurationError, MeClearEngine
from meclear_integrations.core.config import PresetName
from meclear_integrations.simulation import redundant_harm_example

CHEAP = {"hierarchical_from": 5, "blocks": 4, "branching": 2}


def _differences(config: ClearanceConfig) -> dict[str, object]:
    default = ClearanceConfig()
    return {
        name: getattr(config, name)
        for name in ClearanceConfig.model_fields
        if getattr(config, name) != getattr(default, name)
    }


def test_cheap_is_the_default_with_a_smaller_hierarchical_first_level() -> None:
    assert _differences(ClearanceConfig.cheap()) == CHEAP
    # everything that decides safety stays the default's
    cheap, default = ClearanceConfig.cheap(), ClearanceConfig()
    for name in ("early_exit", "verification", "recovery_rate", "exit_rate", "max_trials"):
        assert getattr(cheap, name) == getattr(default, name)


def test_preset_names_and_overrides() -> None:
    assert "cheap" in typing.get_args(PresetName)
    assert ClearanceConfig.preset("cheap") == ClearanceConfig.cheap()
    assert ClearanceConfig.preset("cheap", seed=7).seed == 7
    overridden = ClearanceConfig.cheap(blocks=3, max_concurrency=2)
    assert _differences(overridden) == {**CHEAP, "blocks": 3, "max_concurrency": 2}
    with pytest.raises(ConfigurationError, match="'paper', 'default' or 'cheap'"):
        ClearanceConfig.preset("cheapest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="did you mean 'blocks'"):
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
