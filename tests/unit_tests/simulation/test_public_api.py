"""The simulated world's public surface: an exact ``__all__`` list."""

from __future__ import annotations

import meclear_integrations.simulation as simulation

EXPECTED = [
    "Claim",
    "EvidenceWorld",
    "JUDGE_SIGNALS",
    "JudgeSignal",
    "SimulatedCase",
    "SimulatedEvaluator",
    "SimulatedJudge",
    "SimulatedQuery",
    "StandInModel",
    "TextReader",
    "exact_match_score",
    "normalize_answer",
    "redundant_harm_example",
]


def test_simulation_all_is_exact() -> None:
    assert sorted(simulation.__all__) == EXPECTED
    for name in simulation.__all__:
        assert hasattr(simulation, name), name
