"""A fresh PostgreSQL database per test, on the server at ``MECLEAR_TEST_POSTGRES_URL``.

``bash .ci/run`` starts a private server and sets it. Without it the PostgreSQL tests are
skipped and say so; with ``MECLEAR_REQUIRE_POSTGRES=1`` (set by ``.ci/run``) a missing or
unreachable server fails them instead. Each test's database has a random name, so tests on
parallel pytest-xdist workers never share one; it is dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
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
