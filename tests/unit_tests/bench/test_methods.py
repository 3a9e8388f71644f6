"""Methods on hand-written cases: what each flags and deletes, and identical cost counting."""

from __future__ import annotations

import numpy as np
import pytest

from meclear_bench import BenchSettings, CountingEvaluator
from meclear_bench.methods import (
    MethodContext,
    MethodNotRunError,
    build_method,
    pairwise_features,
    prompt_rater,
    shapley_from_moebius,
    verified_clearance,
)
from meclear_bench.methods.ablations import fit_standardised_lasso
from meclear_bench.oracle import CaseOracle
from meclear_integrations.core import ClearanceConfig, MeClearEngine

from .cases_fixture import (
    GOLD,
    WRONG,
    clean_case,
    direct_case,
    joint_case,
    make_case,
    redundant_case,
)

# Exact enumeration (Eq. 3) keeps these expectations independent of the engine default.
SETTINGS = BenchSettings(
    engine=ClearanceConfig.model_validate({"estimator": "exact", "budget": {"max_concurrency": 1}})
)


def run(name, case, settings=SETTINGS, **kw):
    counter = CountingEvaluator(case.evaluator())
    method = build_method(name, settings, **kw)
    out = method.run(MethodContext(case=case, evaluate=counter, settings=settings))
    return out, counter


def test_loo_is_blind_to_redundant_harm_and_meclear_is_not() -> None:
    case = redundant_case()
    loo, loo_cost = run("loo", case)
    assert loo.flagged == [] and loo.cleared == [] and loo.ranking == []
    assert set(loo.scores.values()) == {0.0}  # Theorem 1: d_i = 0 for both faults
    # K + 1 coalitions: the full context's T = 2 trials (no early exit), one per LOO
    assert (loo_cost.coalitions, loo_cost.calls) == (6, 7)
    mc, _ = run("meclear", case)
    assert set(mc.flagged) == {"f1", "f2"} and set(mc.cleared) == {"f1", "f2"}
    assert set(mc.ranking[:2]) == {"f1", "f2"}


def test_loo_finds_direct_and_joint_faults() -> None:
    assert run("loo", direct_case())[0].flagged == ["f1"]
    assert set(run("loo", joint_case())[0].flagged) == {"f1", "f2"}


@pytest.mark.parametrize("name", ["contextcite", "proxyspex"])
def test_surrogates_rank_redundant_faults_first_at_budget_32(name: str) -> None:
    settings = SETTINGS.model_copy(update={"match_budget": False})
    out, counter = run(name, redundant_case(), settings)
    assert set(out.ranking[:2]) == {"f1", "f2"}
    assert set(out.flagged) >= {"f1", "f2"}
    # 32 distinct ablations (sampled without replacement: the whole table at K = 5), one
    # trial each; the full context and the verified candidates get more
    assert counter.coalitions == 32 and out.details["ablations"] == 32
    assert 32 < counter.calls <= 32 + 20


def test_ablations_are_distinct_and_budgets_can_be_matched() -> None:
    from meclear_bench.methods.ablations import distinct_masks

    masks = distinct_masks(5, 20, 0.5, np.random.default_rng(0))
    assert masks.shape == (20, 5) and len({m.tobytes() for m in masks}) == 20
    assert distinct_masks(3, 50, 0.5, np.random.default_rng(0)).shape == (8, 3)
    counter = CountingEvaluator(redundant_case().evaluator())
    method = build_method("contextcite", SETTINGS)
    ctx = MethodContext(
        case=redundant_case(), evaluate=counter, settings=SETTINGS, matched_coalitions=12
    )
    assert method.run(ctx).details["ablations"] == 12


def test_baselines_share_the_early_exit() -> None:
    for name in ("loo", "contextcite", "proxyspex"):
        out, counter = run(name, clean_case())
        assert out.details == {"early_exit": True} and out.cleared == []
        assert counter.coalitions == 1  # the full context's trials only


def test_relative_flag_rule() -> None:
    from meclear_bench.methods import flag_order

    weights = [-0.8, -0.1, 0.3, -0.5, -0.02]
    assert flag_order(weights, 0.05) == [0, 3, 1]
    assert flag_order(weights, 0.05, "relative") == [0, 3]
    assert flag_order(weights, 0.0, "relative") == [0, 3]
    assert flag_order([0.1, 0.2], 0.0, "relative") == []


def test_contextcite_reports_negative_weights() -> None:
    out, _ = run("contextcite", direct_case())
    assert "f1" in out.details["negative_weights"]
    assert out.scores["f1"] < 0 < out.scores["g"]


def test_lasso_recovers_a_linear_effect_on_the_original_scale() -> None:
    rng = np.random.default_rng(0)
    x = (rng.random((200, 3)) < 0.5).astype(float)
    y = 0.8 - 0.5 * x[:, 0] + 0.2 * x[:, 2]
    w = fit_standardised_lasso(x, y, alpha=1e-4)
    np.testing.assert_allclose(w, [-0.5, 0.0, 0.2], atol=0.01)
    assert fit_standardised_lasso(x, np.ones(200), alpha=0.01).tolist() == [0.0, 0.0, 0.0]


def test_moebius_to_shapley_splits_pair_terms() -> None:
    phi = shapley_from_moebius(3, np.array([0.1, 0.0, 0.0]), {(0, 1): -1.0})
    np.testing.assert_allclose(phi, [-0.4, -0.5, 0.0])
    feats, pairs = pairwise_features(np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]]))
    assert pairs == [(0, 1), (0, 2), (1, 2)]
    np.testing.assert_array_equal(feats[:, 3:], [[1, 0, 0], [0, 1, 0]])


def test_none_costs_nothing_and_clears_nothing() -> None:
    out, counter = run("none", redundant_case())
    assert (out.ranking, out.flagged, out.cleared, counter.calls) == ([], [], [], 0)


def test_llm_direct_is_not_run_offline_and_runs_with_a_rater() -> None:
    with pytest.raises(MethodNotRunError, match="not run offline"):
        run("llm-direct", direct_case())
    prompts: list[str] = []

    def complete(prompt: str) -> str:
        prompts.append(prompt)
        return "Scores: [0.1, 0.9, 0.2, 0.6, 0.0]"

    paper = SETTINGS.model_copy(update={"clearance": "paper"})
    out, counter = run("llm-direct", direct_case(), paper, rater=prompt_rater(complete))
    assert out.flagged == ["f1", "b1"]  # >= 0.5, highest first; ids g, f1, b0, b1, b2
    assert out.cleared == ["f1", "b1"]  # the paper's baseline deletes its flagged set
    assert "Which month" in prompts[0] and counter.calls == 0
    with pytest.raises(ValueError, match="list of 5"):
        prompt_rater(lambda p: "[0.5]")("q", ["a"] * 5)


@pytest.mark.parametrize("rule", ["paper", "sequential"])
def test_verified_rule_picks_the_smallest_maximum_gain_candidate(rule: str) -> None:
    case = joint_case()  # removing either joint fault recovers
    config = ClearanceConfig(verification=rule)
    oracle = CaseOracle(case.context(), CountingEvaluator(case.evaluator()), config=config)
    cleared, tried, status = verified_clearance(oracle, [1, 2])
    assert cleared == [1] and status == "complete"
    assert [t["admissible"] for t in tried] == [True, True, True]
    # the sequential rule breaks the tie only after both got max_trials (all agree here)
    expected = config.trials if rule == "paper" else config.verification.max_trials
    assert tried[1]["trials"] == tried[2]["trials"] == expected


def test_clearance_modes_decide_what_a_baseline_deletes() -> None:
    # a background memory the LLM rater wrongly flags: deleting it alone changes nothing
    rater = prompt_rater(lambda p: "[0, 0.9, 0, 0, 0.8]")
    case = direct_case()
    paper, _ = run(
        "llm-direct", case, SETTINGS.model_copy(update={"clearance": "paper"}), rater=rater
    )
    assert paper.cleared == ["f1", "b2"]
    verified, _ = run(
        "llm-direct", case, BenchSettings(clearance="verified", engine=SETTINGS.engine), rater=rater
    )
    assert verified.cleared == ["f1"]  # C_1 already recovers; C_2 adds no gain


def test_counting_layer_charges_meclear_as_the_engine_counts() -> None:
    case = redundant_case()
    counter = CountingEvaluator(case.evaluator())
    config = ClearanceConfig.model_validate({"seed": 3, "budget": {"max_concurrency": 1}})
    report = MeClearEngine(config).clear(case.context(), counter)
    assert counter.coalitions == report.cost.coalitions
    assert counter.calls == report.cost.evaluator_calls


def test_clean_case_nothing_flagged_by_meclear() -> None:
    out, _ = run("meclear", clean_case())
    assert out.flagged == [] and out.cleared == []


def test_unknown_method_and_bad_preset() -> None:
    with pytest.raises(ValueError, match="unknown method"):
        build_method("magic", SETTINGS)
    with pytest.raises(ValueError, match="takes no preset"):
        build_method("loo:paper", SETTINGS)


def test_case_fixture_structures_hold() -> None:
    c = make_case("x", "direct", {"g": (GOLD, 1.0), "f": (WRONG, 2.0)}, ["f"])
    ev = c.evaluator()
    mem = {m.id: m for m in c.context()}
    assert ev((mem["g"],), 0) == 1.0 and ev((mem["g"], mem["f"]), 0) == 0.0


@pytest.mark.parametrize(("complete", "close"), [(True, 24), (False, 24), (True, None)])
def test_a_complete_table_gives_a_baseline_the_close_trials(
    complete: bool, close: int | None
) -> None:
    """The engine's close trials read only verdicts, so a baseline whose coalition table is
    complete settles close verdicts as the engine does; otherwise Eq. 18-20 as they stand."""
    from itertools import combinations

    from meclear_integrations.core import Verification

    case = joint_case()
    config = ClearanceConfig(verification=Verification(close_trials=close))
    oracle = CaseOracle(case.context(), CountingEvaluator(case.evaluator()), config=config)
    positions = range(oracle.k)
    if complete:
        for size in range(oracle.k + 1):
            for coalition in combinations(positions, size):
                oracle.scores(coalition)
    settled: list[int] = []
    settle = oracle.rule.settle_close

    def spy(game, candidates, at_most):
        settled.append(at_most)
        return settle(game, candidates, at_most)

    oracle.rule.settle_close = spy  # type: ignore[method-assign]
    cleared, _, status = verified_clearance(oracle, [1, 2])
    assert settled == ([24] if complete and close is not None else [])
    assert cleared == [1] and status == "complete"
