"""The ledger's public surface and its import footprint."""

from __future__ import annotations

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


def test_ledger_errors_are_package_errors_and_keep_their_builtin_base() -> None:
    from meclear_integrations.core.errors import MeClearError

    for error, builtin in (
        (ledger.LedgerLookupError, KeyError),
        (ledger.ReplayError, ValueError),
        (ledger.SchemaVersionError, RuntimeError),
    ):
        assert issubclass(error, MeClearError) and issubclass(error, builtin), error
    assert str(ledger.LedgerLookupError("no run 'r1'")) == "no run 'r1'"
