"""Ledger tests run on an SQLite file here and on a real PostgreSQL server in the
integration tier (``tests/integration_tests/ledger``).

PostgreSQL comes from ``MECLEAR_TEST_POSTGRES_URL`` (``bash .ci/run`` starts a private
server and sets it). Without it the PostgreSQL variants are skipped and say so; with
``MECLEAR_REQUIRE_POSTGRES=1`` (set by ``.ci/run``) a missing or unreachable server fails
them instead. Every PostgreSQL test gets a database of its own, dropped afterwards.
"""

from __future__ import annotations

import pytest

pytest.importorskip("sqlalchemy")

from tests.support.postgres import postgres_url  # noqa: F401  (fixture)


@pytest.fixture
def ledger_url(tmp_path) -> str:
    """A fresh SQLite ledger (the unit tier has no network; the same tests run on PostgreSQL
    in ``tests/integration_tests/ledger``)."""
    return f"sqlite:///{tmp_path / 'ledger.db'}"
