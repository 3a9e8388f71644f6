"""The ledger's public surface and its import footprint."""

from __future__ import annotations

import subprocess
import sys

import pytest

import meclear_integrations.ledger as ledger

EXPECTED = [
    "FeedbackRecord",
    "HarmLedger",
    "LedgerLookupError",
    "MemoryHistory",
    "MemoryRecord",
    "ReplayError",
    "ReplayResult",
    "ReviewProposal",
    "RunMode",
    "RunRecord",
    "SchemaVersionError",
    "ScopedHarm",
    "SuccessSignal",
    "areplay_feedback",
    "content_hash",
    "replay_feedback",
    "replay_pending",
]


def test_all_is_the_expected_surface() -> None:
    assert sorted(ledger.__all__) == EXPECTED
    for name in ledger.__all__:
        assert hasattr(ledger, name), name


@pytest.mark.slow  # starts a subprocess
def test_the_ledger_loads_no_framework_and_the_engine_no_database() -> None:
    code = (
        "import sys, meclear_integrations;"
        "assert 'sqlalchemy' not in sys.modules, 'engine imported sqlalchemy';"
        "import meclear_integrations.ledger;"
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "('langchain_core', 'llama_index', 'matplotlib', 'psycopg')];"
        "assert not heavy, heavy"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_ledger_errors_are_package_errors_and_keep_their_builtin_base() -> None:
    from meclear_integrations.core.errors import MeClearError

    for error, builtin in (
        (ledger.LedgerLookupError, KeyError),
        (ledger.ReplayError, ValueError),
        (ledger.SchemaVersionError, RuntimeError),
    ):
        assert issubclass(error, MeClearError) and issubclass(error, builtin), error
    assert str(ledger.LedgerLookupError("no run 'r1'")) == "no run 'r1'"
