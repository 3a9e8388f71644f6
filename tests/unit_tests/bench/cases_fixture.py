"""Hand-written cases of the four structures on the simulated world (shared by bench tests)."""

from __future__ import annotations

from meclear_bench import BenchCase

GOLD = "December 2023"
WRONG = "January 2023"


def make_case(
    case_id: str,
    structure: str,
    claims: dict[str, tuple[str, float]],
    targets: list[str],
    *,
    cluster: str = "conv-a",
    query_id: str | None = None,
    k: int = 5,
    fault_type: str | None = "precise_temporal",
) -> BenchCase:
    ids = list(claims) + [f"b{i}" for i in range(k - len(claims))]
    return BenchCase.model_validate(
        {
            "case_id": case_id,
            "cluster": cluster,
            "query_id": query_id or case_id,
            "query": "Which month was John in Italy?",
            "reference": GOLD,
            "structure": structure,
            "fault_type": None if structure == "clean" else fault_type,
            "memories": [
                {"id": i, "text": f"memory {i} of {case_id}", "metadata": {}} for i in ids
            ],
            "targets": targets,
            "world": {
                "claims": {i: {"answer": a, "weight": w} for i, (a, w) in claims.items()},
                "temperature": 0.0,
                "abstain": "I don't know",
            },
        }
    )


def direct_case(**kw) -> BenchCase:
    return make_case(
        kw.pop("case_id", "direct"), "direct", {"g": (GOLD, 1.0), "f1": (WRONG, 1.5)}, ["f1"], **kw
    )


def redundant_case(**kw) -> BenchCase:
    return make_case(
        kw.pop("case_id", "redundant"),
        "redundant",
        {"g": (GOLD, 1.0), "f1": (WRONG, 1.5), "f2": (WRONG, 1.5)},
        ["f1", "f2"],
        **kw,
    )


def joint_case(**kw) -> BenchCase:
    return make_case(
        kw.pop("case_id", "joint"),
        "joint",
        {"g": (GOLD, 1.0), "f1": (WRONG, 0.6), "f2": (WRONG, 0.6)},
        ["f1", "f2"],
        **kw,
    )


def clean_case(**kw) -> BenchCase:
    return make_case(kw.pop("case_id", "clean"), "clean", {"g": (GOLD, 1.0)}, [], **kw)


def four_cases() -> list[BenchCase]:
    return [
        direct_case(cluster="conv-a"),
        redundant_case(cluster="conv-a"),
        joint_case(cluster="conv-b"),
        clean_case(cluster="conv-b"),
    ]
