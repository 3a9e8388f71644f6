"""Connections to the ledger database: an SQLite file by default, PostgreSQL for replicas.

URLs are SQLAlchemy URLs; a plain path means an SQLite file, and ``postgresql://`` /
``postgres://`` use the psycopg 3 driver (``postgresql+psycopg://``).

Concurrent writers:

- SQLite: write-ahead logging (readers never block the writer), every write transaction
  starts with ``BEGIN IMMEDIATE`` (it takes the write lock up front instead of failing
  with "database is locked" when a read transaction tries to upgrade), and a busy timeout
  makes a writer wait for the lock instead of failing. Threads and processes on one
  machine can share one file; WAL needs a local file system (not a network share).
- PostgreSQL: each write is one transaction of inserts; many replicas can write at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool

__all__ = [
    "DEFAULT_LEDGER_URL",
    "LEDGER_URL_ENV",
    "create_ledger_engine",
    "display_url",
    "ledger_url",
    "read_transaction",
    "single_read",
    "write_transaction",
]

LEDGER_URL_ENV = "MECLEAR_LEDGER_URL"
"""Environment variable naming the ledger database when none is given."""
DEFAULT_LEDGER_URL = "sqlite:///meclear-ledger.db"
"""The default: an SQLite file in the working directory."""
SQLITE_BUSY_SECONDS = 60.0
"""How long an SQLite writer waits for another writer's lock before failing."""
_WRITE = "meclear_write"


def ledger_url(target: str | os.PathLike[str] | None = None) -> str:
    """The SQLAlchemy URL for ``target``: a URL, a path (SQLite) or None.

    None reads the environment variable :data:`LEDGER_URL_ENV`, else :data:`DEFAULT_LEDGER_URL`.

    Args:
        target: A SQLAlchemy URL, a path to an SQLite file, or None.

    Returns:
        The SQLAlchemy URL.

    Example:
        >>> ledger_url("/tmp/ledger.db")
        'sqlite:////tmp/ledger.db'
    """
    if target is None:
        target = os.environ.get(LEDGER_URL_ENV) or DEFAULT_LEDGER_URL
    if isinstance(target, os.PathLike) or "://" not in str(target):
        path = Path(target).expanduser()
        return "sqlite:///:memory:" if str(target) == ":memory:" else f"sqlite:///{path}"
    url = str(target)
    for bare in ("postgresql://", "postgres://"):
        if url.startswith(bare):
            return "postgresql+psycopg://" + url[len(bare) :]
    return url


def display_url(url: str) -> str:
    """``url`` with its password hidden (safe to print or log).

    Args:
        url: A SQLAlchemy URL.

    Returns:
        The URL with ``***`` for its password.

    Example:
        >>> display_url("postgresql://app:secret@db:5432/ledger")
        'postgresql://app:***@db:5432/ledger'
    """
    return make_url(url).render_as_string(hide_password=True)


def create_ledger_engine(url: str, **engine_kwargs: Any) -> Engine:
    """A SQLAlchemy engine for ``url`` set up for concurrent writers (module docstring).

    Args:
        url: The SQLAlchemy URL.
        **engine_kwargs: Passed to ``create_engine``.

    Returns:
        The engine.
    """
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(url, parsed.database, engine_kwargs)
    if backend == "postgresql" and parsed.get_driver_name() == "psycopg":
        try:
            import psycopg  # noqa: F401
        except ImportError as exc:
            raise ImportError(
                "a PostgreSQL ledger needs psycopg 3: pip install 'meclear-integrations[postgres]'"
            ) from exc
    engine_kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **engine_kwargs)


def _sqlite_engine(url: str, database: str | None, kwargs: dict[str, Any]) -> Engine:
    memory = database in (None, "", ":memory:")
    connect_args = dict(kwargs.pop("connect_args", {}))
    connect_args.setdefault("timeout", SQLITE_BUSY_SECONDS)
    if memory:  # one shared connection, or every connection would see its own database
        connect_args.setdefault("check_same_thread", False)
        kwargs.setdefault("poolclass", StaticPool)
    else:
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)  # type: ignore[arg-type]
    engine = create_engine(url, connect_args=connect_args, **kwargs)

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # transactions are begun below
        cursor = dbapi_connection.cursor()
        if not memory:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_SECONDS * 1000)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        write = connection.get_execution_options().get(_WRITE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A connection in a write transaction, committed on success, rolled back on error.

    Args:
        engine: The ledger's engine.

    Yields:
        The connection.
    """
    with engine.connect() as connection:
        connection = connection.execution_options(**{_WRITE: True})
        with connection.begin():
            yield connection


@contextmanager
def read_transaction(engine: Engine) -> Iterator[Connection]:
    """A connection in a read transaction (a consistent snapshot of the ledger).

    Args:
        engine: The ledger's engine.

    Yields:
        The connection.
    """
    with engine.connect() as connection, connection.begin():
        yield connection


@contextmanager
def single_read(engine: Engine) -> Iterator[Connection]:
    """A connection for one read statement, with the fewest round trips (the request path).

    PostgreSQL runs it in autocommit (one statement is consistent by itself: no ``BEGIN`` /
    ``COMMIT`` round trips); SQLite in a read transaction as usual (no network).

    Args:
        engine: The ledger's engine.

    Yields:
        The connection.
    """
    if engine.dialect.name == "postgresql":
        with engine.connect() as connection:
            yield connection.execution_options(isolation_level="AUTOCOMMIT")
        return
    with read_transaction(engine) as connection:
        yield connection


def lock_for_migration(connection: Connection) -> None:
    """Serialize schema migrations across processes and replicas (inside a write transaction).

    PostgreSQL takes a transaction-scoped advisory lock; SQLite already holds the write lock
    (``BEGIN IMMEDIATE``).

    Args:
        connection: The connection of the migration's write transaction.
    """
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(7263401180093321)"))
