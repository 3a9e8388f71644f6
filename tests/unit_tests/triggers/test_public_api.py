"""The triggers' public surface; triggers and the gate load no framework or database."""

from __future__ import annotations

import meclear_integrations.guard.gate as gate
import meclear_integrations.triggers as triggers

EXPECTED = [
    "AllOf",
    "Always",
    "AnyOf",
    "EveryN",
    "EverySeconds",
    "OnKnownHarm",
    "OnNegativeFeedback",
    "Sampling",
    "TokenBudget",
    "Trigger",
    "TriggerContext",
    "TriggerDecision",
    "WhenJudgeFails",
]


def test_all() -> None:
    assert sorted(triggers.__all__) == EXPECTED
    assert sorted(gate.__all__) == ["ClearanceGate", "GateOutcome", "GatePlan", "LedgerLike"]
    for module in (triggers, gate):
        for name in module.__all__:
            assert hasattr(module, name), name
