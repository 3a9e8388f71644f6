"""The simulated evidence world reproduces the paper's harm structures (simulated)."""

from __future__ import annotations

import math

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.simulation import (
    Claim,
    EvidenceWorld,
    SimulatedEvaluator,
    TextReader,
    exact_match_score,
    normalize_answer,
    redundant_harm_example,
)

REF = "December 2023"
SUBSETS = (["g"], ["g", "f1"], ["g", "f2"], ["g", "f1", "f2"])


def world(**claims: tuple[str, float]) -> dict[str, Claim]:
    return {mid: Claim(answer=a, weight=w) for mid, (a, w) in claims.items()}


def test_normalisation_and_judge() -> None:
    assert normalize_answer("  The December, 2023! ") == "december 2023"
    assert exact_match_score("december 2023.", REF) == 1.0
    assert exact_match_score("January 2023", REF) == 0.0


def test_abstain_without_support_and_background_ignored() -> None:
    w = EvidenceWorld(claims=world(g=(REF, 1.0)), abstain="unknown")
    assert w.answer(["b1", "b2"]) == "unknown"
    assert w.answer(["g", "b1"]) == REF


def test_direct_structure_one_fault_flips_the_answer() -> None:
    w = EvidenceWorld(claims=world(g=(REF, 1.0), f=("January 2023", 1.5)))
    assert w.expected_score(["g"], REF) == 1.0
    assert w.expected_score(["g", "f"], REF) == 0.0


def test_redundant_structure_masks_loo() -> None:
    w = EvidenceWorld(claims=world(g=(REF, 1.0), f1=("Jan", 1.5), f2=("Jan", 1.5)))
    assert w.expected_score(["g", "f1", "f2"], REF) == 0.0
    assert w.expected_score(["g", "f1"], REF) == 0.0  # deleting f2 alone: still wrong
    assert w.expected_score(["g", "f2"], REF) == 0.0  # deleting f1 alone: still wrong
    assert w.expected_score(["g"], REF) == 1.0


def test_joint_structure_harmful_only_together() -> None:
    w = EvidenceWorld(claims=world(g=(REF, 1.0), f1=("Jan", 0.6), f2=("Jan", 0.6)))
    assert w.expected_score(["g", "f1"], REF) == 1.0
    assert w.expected_score(["g", "f2"], REF) == 1.0
    assert w.expected_score(["g", "f1", "f2"], REF) == 0.0


def test_table1_plateau_with_max_aggregation() -> None:
    """Signature (1.0, 0.5, 0.5, 0.5): either or both faults tie with the gold memory."""
    w = EvidenceWorld(claims=world(g=(REF, 1.0), f1=("Jan", 1.0), f2=("Jan", 1.0)), aggregate="max")
    signature = [w.expected_score(s, REF) for s in SUBSETS]
    assert signature == [1.0, 0.5, 0.5, 0.5]
    # Ties are broken uniformly at random: both answers show up across trials.
    answers = {w.answer(["g", "f1"], case_id="c", trial=t) for t in range(40)}
    assert answers == {REF, "Jan"}


def test_table1_floor_with_sum_aggregation() -> None:
    w = EvidenceWorld(claims=world(g=(REF, 1.0), f1=("Jan", 1.2), f2=("Jan", 1.2)))
    signature = [w.expected_score(s, REF) for s in SUBSETS]
    assert signature == [1.0, 0.0, 0.0, 0.0]


def test_temperature_softmax_probabilities() -> None:
    w = EvidenceWorld(claims=world(g=(REF, 2.0), f=("Jan", 1.0)), temperature=0.5)
    dist = w.distribution(["g", "f"])
    assert dist[REF] == pytest.approx(math.exp(4) / (math.exp(4) + math.exp(2)))
    # Empirical frequency over seeded trials follows the distribution.
    hits = sum(w.answer(["g", "f"], case_id="t", trial=t) == REF for t in range(2000))
    assert hits / 2000 == pytest.approx(dist[REF], abs=0.03)


def test_answers_are_reproducible_per_case_coalition_trial() -> None:
    w = EvidenceWorld(claims=world(g=(REF, 1.0), f=("Jan", 1.0)))
    first = [w.answer(["g", "f"], case_id="x", trial=t) for t in range(20)]
    assert first == [w.answer(["f", "g"], case_id="x", trial=t) for t in range(20)]
    assert first != [w.answer(["g", "f"], case_id="y", trial=t) for t in range(20)]


def test_text_reader_finds_memories_in_a_prompt() -> None:
    case = redundant_harm_example()
    reader = TextReader(case.world, case.texts, case_id=case.case_id)
    prompt = "Memories:\n" + "\n".join(m.content for m in case.memories if m.id in {"g1", "b1"})
    assert reader.present(prompt) == ("b1", "g1")
    assert reader.answer(prompt) == REF


def test_redundant_example_loo_blind_meclear_clears_both() -> None:
    case = redundant_harm_example()
    report = MeClearEngine(ClearanceConfig()).clear(case.memories, case.evaluator())
    assert all(a.loo_label == "inconclusive" for a in report.attributions)
    assert report.cleared_ids == ["f1", "f2"]
    assert report.recovered and report.final_value == 1.0 and report.baseline_value == 0.0


def test_simulated_evaluator_scores_coalitions() -> None:
    case = redundant_harm_example()
    evaluate = SimulatedEvaluator(case.world, case.reference, case_id=case.case_id)
    by_id = {m.id: m for m in case.memories}
    coalition: tuple[Memory, ...] = (by_id["g1"], by_id["b2"])
    assert evaluate(coalition, 0) == 1.0
    assert evaluate((by_id["g1"], by_id["f2"]), 1) == 0.0
