"""Causal verification: each structure's signature is required, and violations are named."""

from __future__ import annotations

import pytest

from meclear_bench import BenchCase, verify_case


def _case(
    structure: str, weights: dict[str, float], targets: list[str], **world: object
) -> BenchCase:
    texts = {
        "g": "Ana lives in Lisbon.",
        "b": "Ana bakes bread.",
        "f1": "Ana lives in Porto.",
        "f2": "Ben says Ana moved to Porto.",
    }
    claims = {
        mid: {"answer": "Lisbon" if mid == "g" else "Porto", "weight": w}
        for mid, w in weights.items()
    }
    ids = ["g", "b", *[t for t in ("f1", "f2") if t in weights]]
    return BenchCase.model_validate(
        {
            "case_id": f"v-{structure}",
            "cluster": "c",
            "query_id": "q",
            "query": "Where does Ana live?",
            "reference": "Lisbon",
            "structure": structure,
            "fault_type": None,
            "memories": [{"id": i, "text": texts[i]} for i in ids],
            "targets": targets,
            "world": {"claims": claims, **world},
        }
    )


@pytest.mark.parametrize(
    ("structure", "weights", "targets", "reason"),
    [
        ("clean", {"g": 1.0}, [], None),
        ("direct", {"g": 1.0, "f1": 2.0}, ["f1"], None),
        ("direct", {"g": 1.0, "f1": 0.5}, ["f1"], "direct_not_failing"),
        ("redundant", {"g": 1.0, "f1": 1.5, "f2": 1.5}, ["f1", "f2"], None),
        (
            "redundant",
            {"g": 1.0, "f1": 0.6, "f2": 1.5},
            ["f1", "f2"],
            "redundant_fault_alone_harmless",
        ),
        ("redundant", {"g": 1.0, "f1": 0.3, "f2": 0.3}, ["f1", "f2"], "redundant_pair_harmless"),
        ("joint", {"g": 1.0, "f1": 0.6, "f2": 0.6}, ["f1", "f2"], None),
        ("joint", {"g": 1.0, "f1": 1.5, "f2": 0.6}, ["f1", "f2"], "joint_fault_alone_harmful"),
        ("joint", {"g": 1.0, "f1": 0.4, "f2": 0.4}, ["f1", "f2"], "joint_pair_harmless"),
        ("direct", {"f1": 2.0}, ["f1"], "clean_incorrect"),
        ("redundant", {"g": 1.0, "f1": 2.0}, ["f1"], "wrong_target_count"),
        ("mystery", {"g": 1.0, "f1": 2.0}, ["f1"], "unknown_structure"),
    ],
)
def test_signatures(structure: str, weights: dict, targets: list, reason: str | None) -> None:
    verdict = verify_case(_case(structure, weights, targets))
    assert verdict.ok is (reason is None)
    assert verdict.reason == reason


def test_redundant_signature_values() -> None:
    verdict = verify_case(_case("redundant", {"g": 1.0, "f1": 1.5, "f2": 1.5}, ["f1", "f2"]))
    assert verdict.signature == {"G": 1.0, "G+M": 0.0, "G+F1": 0.0, "G+F2": 0.0}


def test_plateau_counts_as_failure() -> None:
    """A max-aggregation tie is right in some trials only: not 'correct in both'."""
    case = _case("redundant", {"g": 1.0, "f1": 1.0, "f2": 1.0}, ["f1", "f2"], aggregate="max")
    assert case.world.expected_score(["g", "f1"], "Lisbon") == pytest.approx(0.5)
    verdict = verify_case(case, trials=8)  # 8 fair coin flips are never all right here
    assert verdict.ok, verdict


def test_texts_must_not_contain_each_other() -> None:
    case = _case("direct", {"g": 1.0, "f1": 2.0}, ["f1"])
    data = case.model_dump()
    data["memories"][2]["text"] = "Ana lives in Lisbon. Ana lives in Porto."
    verdict = verify_case(BenchCase.model_validate(data))
    assert verdict.reason == "ambiguous_texts"
