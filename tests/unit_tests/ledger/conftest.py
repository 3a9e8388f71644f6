"""Ledger tests run on an SQLite file here and on a real PostgreSQL server in the
integration tier (``tests/integration_tests/ledger``).

PostgreSQL comes from ``MECLEAR_TEST_POSTGRES_URL`` (``bash .ci/run`` starts a private
server and sets it). Without it the PostgreSQL variants are skipped and say so; with
``MECLEAR_REQUIRE_POSTGRES=1`` (set by ``.ci/run``) a missing or unreachable server fails
them instead. Every PostgreSQL test gets a database of its own, dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

pytest.importorskip("sqlalchemy")

from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

POSTGRES_ENV = "MECLEAR_TEST_POSTGRES_URL"
REQUIRE_ENV = "MECLEAR_REQUIRE_POSTGRES"
NO_SERVER = (
    f"PostgreSQL ledger tests skipped: no server configured (set {POSTGRES_ENV}; "
    "bash .ci/run starts one)"
)


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1: CI must run the PostgreSQL tests)")
    pytest.skip(reason)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database for one test."""
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        _unavailable(NO_SERVER)
    name = f"meclear_test_{uuid.uuid4().hex[:16]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    except Exception as exc:
        admin.dispose()
        _unavailable(f"PostgreSQL at {POSTGRES_ENV} is unreachable: {type(exc).__name__}: {exc}")
    try:
        yield make_url(url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


@pytest.fixture
def ledger_url(tmp_path) -> str:
    """A fresh SQLite ledger (the unit tier has no network; the same tests run on PostgreSQL
    in ``tests/integration_tests/ledger``)."""
    return f"sqlite:///{tmp_path / 'ledger.db'}"
