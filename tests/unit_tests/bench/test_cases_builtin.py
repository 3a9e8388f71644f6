"""The shipped case set: packaged, varied, and every case causally verified."""

from __future__ import annotations

import json
from collections import Counter
from importlib.resources import files
from pathlib import Path

import pytest

from meclear_bench import load_builtin_cases, verify_case
from meclear_bench.builtin import BUILTIN_CASES_RESOURCE


def test_resource_is_inside_the_package() -> None:
    resource = files("meclear_bench").joinpath(BUILTIN_CASES_RESOURCE)
    assert resource.is_file()
    assert len(resource.read_text(encoding="utf-8").splitlines()) == len(load_builtin_cases())


def test_coverage_of_structures_fault_types_and_worlds() -> None:
    cases = load_builtin_cases()
    assert 24 <= len(cases) <= 40
    structures = Counter(c.structure for c in cases)
    assert set(structures) == {"direct", "redundant", "joint", "clean"}
    assert min(structures.values()) >= 4
    faults = Counter(c.fault_type for c in cases if c.structure != "clean")
    assert set(faults) == {"explicit_conflict", "precise_factual", "precise_temporal"}
    assert len({c.cluster for c in cases}) >= 4
    assert len({c.query_id for c in cases}) >= 12
    assert any(c.world.aggregate == "max" and c.structure == "redundant" for c in cases)
    assert sum(c.world.temperature > 0 for c in cases) >= 3
    for case in cases:
        assert (case.structure == "clean") == (not case.targets)
        assert case.fault_type is None or case.structure != "clean"


def test_plateau_case_has_the_papers_flat_signature() -> None:
    """Table 1, case A: (v(G), v(G+F1), v(G+F2), v(G+M)) = (1, .5, .5, .5) in expectation."""
    case = next(
        c for c in load_builtin_cases() if c.world.aggregate == "max" and "plateau" in c.case_id
    )
    g = [m.id for m in case.memories if m.id not in case.targets]
    f1, f2 = case.targets
    expected = [
        case.world.expected_score(s, case.reference) for s in (g, [*g, f1], [*g, f2], [*g, f1, f2])
    ]
    assert expected == pytest.approx([1.0, 0.5, 0.5, 0.5])


@pytest.mark.parametrize("case", load_builtin_cases(), ids=lambda c: c.case_id)
def test_every_builtin_case_verifies(case) -> None:
    verdict = verify_case(case)
    assert verdict.ok, (verdict.reason, verdict.signature)


LOCOMO = [
    p
    for p in (
        Path("/work/shared/data/locomo10"),
        Path(__file__).parents[4] / "shared/data/locomo10",
    )
    if p.is_dir()
]


@pytest.mark.skipif(not LOCOMO, reason="LoCoMo data not present")
def test_builtin_cases_quote_no_locomo_text() -> None:
    corpus = []
    for file in sorted(LOCOMO[0].glob("*.json")):
        data = json.loads(file.read_text(encoding="utf-8"))
        for key, value in data.items():
            if key.endswith("_observation"):
                corpus += [fact[0] for facts in value.values() for fact in facts]
        corpus += [str(q.get("question", "")) for q in data["qa"]]
    texts = {m.text for c in load_builtin_cases() for m in c.memories}
    texts |= {c.query for c in load_builtin_cases()}
    assert not texts & set(corpus)
