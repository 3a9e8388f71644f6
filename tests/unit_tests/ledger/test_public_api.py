"""The ledger's public surface and its import footprint."""

from __future__ import annotations

import subprocess
import sys

import meclear_integrations.ledger as ledger

EXPECTED = {
    "DEFAULT_LEDGER_URL",
    "LEDGER_URL_ENV",
    "SCHEMA_VERSION",
    "CandidateRecord",
    "FeedbackRecord",
    "HarmLedger",
    "LedgerLookupError",
    "MemoryEvent",
    "MemoryHistory",
    "MemoryObservation",
    "MemoryRecord",
    "ReplayError",
    "ReplayResult",
    "ReviewProposal",
    "RunMode",
    "RunRecord",
    "SchemaVersionError",
    "SuccessSignal",
    "areplay_feedback",
    "content_hash",
    "display_url",
    "ledger_url",
    "proposals_csv",
    "proposals_json",
    "query_hash",
    "replay_feedback",
    "replay_pending",
    "wilson_lower_bound",
}


def test_all_is_the_expected_surface() -> None:
    assert set(ledger.__all__) == EXPECTED
    for name in ledger.__all__:
        assert hasattr(ledger, name), name


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
