"""Shared test configuration: hypothesis runs derandomized under CI (CI=true)."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

_LEDGER_TESTS = pytest.StashKey[bool]()

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_collection_modifyitems(config, items) -> None:
    config.stash[_LEDGER_TESTS] = any("postgres" in item.nodeid for item in items)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Say whether the ledger's PostgreSQL tests had a server (see tests/ledger)."""
    if not config.stash.get(_LEDGER_TESTS, False):
        return
    url = os.environ.get("MECLEAR_TEST_POSTGRES_URL")
    if url:
        line = f"ledger: PostgreSQL tests ran against {url.rsplit('@', 1)[-1]}"
    else:
        line = (
            "ledger: PostgreSQL tests SKIPPED: no server configured "
            "(set MECLEAR_TEST_POSTGRES_URL; bash .ci/run starts one)"
        )
    terminalreporter.write_line(line)
