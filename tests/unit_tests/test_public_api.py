"""The public surface is explicit and stable."""

from __future__ import annotations

import inspect

import meclear_integrations
import meclear_integrations.core
import meclear_integrations.core.estimators
import meclear_integrations.simulation
from meclear_integrations.core import AutoShapley, Estimator, PermutationShapley
from meclear_integrations.core.estimators import ShapleyEstimator

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


EXPECTED_CORE = [
    "AnswerCache",
    "AutoShapley",
    "BudgetExceededError",
    "ClearanceCandidate",
    "ClearanceConfig",
    "ClearanceCost",
    "ClearanceFailedError",
    "ClearanceFailure",
    "ClearanceReport",
    "ClearanceStatus",
    "ConfigurationError",
    "DuplicateMemoryError",
    "Estimator",
    "EvaluatorError",
    "Evaluator",
    "ExactShapley",
    "InvalidRetrievalError",
    "MeClearEngine",
    "MeClearError",
    "Memory",
    "MemoryAttribution",
    "PairInteraction",
    "PermutationShapley",
    "RetryPolicy",
    "ScoreOutOfRangeError",
    "StageEvent",
]

# The grouped configuration's nested models join core's surface (issue 30 item 3);
# together with EXPECTED_CORE they fill core's 30 names (KernelShapley lives in
# core.estimators).
CONFIG_MODELS = {"Budget", "EarlyStops", "FailurePolicy", "Verification"}

EXPECTED_ESTIMATORS = [
    "NUMERICAL_FAILURES",
    "AutoShapley",
    "BernsteinPermutationShapley",
    "Estimator",
    "ExactShapley",
    "HierarchicalShapley",
    "KernelShapley",
    "PermutationShapley",
    "ReducedGame",
    "ShapleyEstimate",
    "ShapleyEstimator",
    "SimilaritySource",
    "configured_estimator",
    "empirical_bernstein_radius",
    "estimator_from_settings",
    "exact_shapley",
    "guarded",
    "hoeffding_epsilon",
    "kernel_budget",
    "make_estimator",
    "named_estimator",
    "resolve_estimator",
    "shapley_weights",
    "solve_constrained",
    "sufficient_permutations",
    "sufficient_permutations_for_gap",
]


def test_top_level_all() -> None:
    assert sorted(meclear_integrations.__all__) == sorted(EXPECTED_TOP)
    assert len(meclear_integrations.__all__) == len(EXPECTED_TOP)
    for name in meclear_integrations.__all__:
        assert hasattr(meclear_integrations, name), name


def test_core_all_is_exactly_the_expected_list() -> None:
    core = [n for n in meclear_integrations.core.__all__ if n not in CONFIG_MODELS]
    assert sorted(core) == sorted(EXPECTED_CORE)
    assert len(set(meclear_integrations.core.__all__)) == len(meclear_integrations.core.__all__)
    assert meclear_integrations.core.estimators.__all__ == EXPECTED_ESTIMATORS
    for module in (meclear_integrations.core, meclear_integrations.core.estimators):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_every_concrete_estimator_is_exported() -> None:
    def concrete(cls: type) -> list[type]:
        ours = cls.__module__.startswith("meclear_integrations.")
        found = [] if inspect.isabstract(cls) or not ours else [cls]
        return found + [c for sub in cls.__subclasses__() for c in concrete(sub)]

    classes = concrete(ShapleyEstimator)
    assert {c.__name__ for c in classes} >= {"ExactShapley", "KernelShapley"}
    assert {"AutoShapley", "ExactShapley", "PermutationShapley"} <= set(
        meclear_integrations.core.__all__
    )
    for cls in classes:
        # Every estimator is public in its home; the everyday ones also in core.
        assert cls.__name__ in meclear_integrations.core.estimators.__all__, cls.__name__
        assert isinstance(cls(), Estimator), cls.__name__  # keyword-only settings, defaults


def test_subpackages_export_what_they_list() -> None:
    for module in (meclear_integrations.core, meclear_integrations.simulation):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_config_defaults_are_the_budget_aware_default() -> None:
    """The default is the budget-aware configuration; the paper's settings are a preset."""
    c = meclear_integrations.ClearanceConfig()
    assert (c.trials, c.loo_tolerance, c.harm_tolerance) == (2, 0.05, 0.05)
    assert c.estimator == "auto" and c.estimator_name == "auto"
    auto = AutoShapley().settings()
    assert auto["exact_budget"] == 32 and auto["coalitions_per_memory"] == 10.0
    # the estimator rules chosen on dev (docs/benchmark/variants.md) are the defaults
    assert auto["exact_error_model"] == "pooled" and auto["exact_noise_floor"] == 0.02
    assert auto["exact_z"] == 1.0
    evidence = c.verification.table_evidence
    assert evidence.residual_z == 1.64
    assert evidence.answer_flags is True and evidence.answer_residual_z == 0.0
    assert auto["max_table_fraction"] == 0.75
    assert PermutationShapley().permutations == 16
    assert c.harm_rule == "auto"
    assert meclear_integrations.ClearanceConfig.paper().harm_rule == "threshold"
    assert c.adaptive_trials and c.early_exit and c.one_batch
    assert c.clearance == "auto"
    assert c.interactions is False and c.verification.success_threshold == 1.0


def test_paper_preset_is_the_papers_configuration() -> None:
    p = meclear_integrations.ClearanceConfig.paper()
    assert (p.trials, p.loo_tolerance, p.harm_tolerance) == (2, 0.05, 0.05)
    assert p.estimator == "permutation"  # L = 16, no adaptive stopping
    assert p.clearance == "nested"
    assert not (p.adaptive_trials or p.early_exit or p.one_batch)
    assert p.interactions is False and p.verification.success_threshold == 1.0
    assert meclear_integrations.ClearanceConfig.preset("paper") == p
    assert meclear_integrations.ClearanceConfig.preset("default") == (
        meclear_integrations.ClearanceConfig()
    )
    assert meclear_integrations.ClearanceConfig.paper(seed=3).seed == 3
