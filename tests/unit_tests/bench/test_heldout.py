"""Held-out structures (meclear_bench.heldout): deterministic per seed, the signatures hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from meclear_bench.heldout import (
    HELDOUT_SEED,
    build_heldout_cases,
    heldout_table,
    run_heldout,
    verify_heldout,
)
from meclear_integrations.simulation.world import exact_match_score

LOCOMO = Path("/work/shared/data/locomo10")


@pytest.fixture(scope="module")
def built() -> tuple[list, dict]:
    if not LOCOMO.exists():
        pytest.skip("LoCoMo (locomo10) not present")
    return build_heldout_cases(LOCOMO, max_queries=8, conversations=["42", "43"])


def _right(case, drop: set[str]) -> bool:
    ids = [m.id for m in case.memories if m.id not in drop]
    return exact_match_score(case.world.answer(ids, case_id=case.case_id), case.reference) == 1.0


def test_deterministic_per_seed_and_seed_dependent(built: tuple[list, dict]) -> None:
    cases, funnel = built
    again, _ = build_heldout_cases(LOCOMO, max_queries=8, conversations=["42", "43"])
    assert [c.model_dump() for c in again] == [c.model_dump() for c in cases]
    assert funnel["seed"] == HELDOUT_SEED and funnel["k"] == 8
    other, _ = build_heldout_cases(LOCOMO, max_queries=8, conversations=["42", "43"], seed=5)
    assert [c.model_dump() for c in other] != [c.model_dump() for c in cases]
    assert {c.structure for c in cases} == {"redundant", "mixed", "direct", "unexplained"}
    assert all(len(c.memories) == 8 for c in cases)


def test_masking_signature(built: tuple[list, dict]) -> None:
    cases, _ = built
    pairs = [c for c in cases if c.structure in ("redundant", "mixed")]
    assert pairs
    for case in pairs:
        first, second = case.targets
        assert not _right(case, set())
        assert not _right(case, {first}), case.case_id  # the other copy masks the removal
        assert not _right(case, {second}), case.case_id
        assert _right(case, {first, second}), case.case_id
        assert verify_heldout(case).ok
    mixed = [c for c in pairs if c.structure == "mixed"]
    assert mixed
    for case in mixed:  # a stale and a conflicting record, two different wrong answers
        a, b = (case.world.claims[t].answer for t in case.targets)
        assert a.lower() != b.lower() and case.fault_type == "stale+conflict"


def test_unexplained_no_clearance_recovers(built: tuple[list, dict]) -> None:
    cases, _ = built
    unexplained = [c for c in cases if c.structure == "unexplained"]
    assert unexplained
    for case in unexplained:
        assert not case.targets
        assert all(claim.answer != case.reference for claim in case.world.claims.values())
        assert not _right(case, set())


def test_run_reports_every_structure(built: tuple[list, dict]) -> None:
    cases, _ = built
    small = [c for c in cases if c.structure in ("redundant", "unexplained")][:6]
    doc = run_heldout(small, families=("contextcite",), replicates=50)
    assert doc["label"] == "SIMULATED"
    assert "contextcite" in doc["fixed_rungs"]
    table = heldout_table(doc)
    assert "SIMULATED" in table
    if any(c.structure == "redundant" for c in small):
        row = doc["structures"]["redundant"]["methods"]["meclear"]
        assert {"abstained", "partial", "background_per_case", "calls_per_case"} <= set(row)
