"""The triggers' public surface; triggers and the gate load no framework or database."""

from __future__ import annotations

import subprocess
import sys

import pytest

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


@pytest.mark.slow  # starts a subprocess
def test_no_framework_or_database_on_import() -> None:
    code = (
        "import sys, meclear_integrations.triggers, meclear_integrations.guard.gate;"
        "meclear_integrations.guard.gate.ClearanceGate().query_id('q');"
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "('langchain_core', 'llama_index', 'sqlalchemy', 'psycopg', 'matplotlib')];"
        "assert not heavy, heavy"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
