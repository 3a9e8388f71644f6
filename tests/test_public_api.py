"""The public surface is explicit and stable."""

from __future__ import annotations

import meclear_integrations
import meclear_integrations.core
import meclear_integrations.simulation

EXPECTED_TOP = {
    "ClearanceCandidate",
    "ClearanceConfig",
    "ClearanceCost",
    "ClearanceReport",
    "ConfigurationError",
    "DuplicateMemoryError",
    "EvaluatorError",
    "MeClearEngine",
    "MeClearError",
    "Memory",
    "MemoryAttribution",
    "PairInteraction",
    "ScoreOutOfRangeError",
    "StageEvent",
    "__version__",
    "exact_shapley",
    "freeze_context",
    "hoeffding_epsilon",
    "sufficient_permutations",
    "sufficient_permutations_for_gap",
}


def test_top_level_all() -> None:
    assert set(meclear_integrations.__all__) == EXPECTED_TOP
    for name in meclear_integrations.__all__:
        assert hasattr(meclear_integrations, name), name


def test_subpackages_export_what_they_list() -> None:
    for module in (meclear_integrations.core, meclear_integrations.simulation):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_config_defaults_are_the_papers() -> None:
    c = meclear_integrations.ClearanceConfig()
    assert (c.permutations, c.trials, c.loo_tolerance, c.harm_tolerance) == (16, 2, 0.05, 0.05)
    assert c.estimator == "permutation" and c.interactions is False
    assert c.success_threshold == 1.0
