"""Versioned schema: a version table and ordered migrations, applied under a lock.

Why not Alembic: the ledger's schema belongs to this package, not to the application, and
it must be brought up to date automatically by whichever replica connects first, while
other replicas connect at the same moment. The migrations therefore run inside one write
transaction that first takes a lock (a PostgreSQL advisory lock; SQLite's write lock), read
the applied versions from ``meclear_schema_version`` and apply the missing ones in order;
DDL is transactional on both backends, so a failed migration leaves the previous version
intact. Each migration is a function over a SQLAlchemy connection using SQLAlchemy's
portable DDL (no SQL per backend). A database written by a newer package (a version this
package does not know) is refused with :class:`SchemaVersionError` rather than misread.

Adding a migration: append ``(N + 1, description, function)`` to :data:`MIGRATIONS` and
change ``schema`` to the new shape; version 1 then has to keep creating the version-1
tables (freeze their definitions in it).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import DDL, Connection, Engine, func, inspect, select

from ..core.errors import MeClearError
from . import schema
from .backfill import rebuild
from .database import lock_for_migration, write_transaction

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SchemaVersionError", "current_version", "migrate"]


class SchemaVersionError(MeClearError, RuntimeError):
    """The ledger database has a schema version this package cannot use."""


def _v1_initial(connection: Connection) -> None:
    tables = [
        schema.runs,
        schema.run_memories,
        schema.candidates,
        schema.feedback,
        schema.feedback_memories,
        schema.memory_events,
    ]
    schema.metadata.create_all(connection, tables=tables)


def _v2_memory_scopes(connection: Connection) -> None:
    schema.metadata.create_all(connection, tables=[schema.memory_scopes])
    rebuild(connection)


def _v3_scope_names(connection: Connection) -> None:
    """Name signatures and a bounded lookup index in ``meclear_memory_scopes``.

    Adds the column ``names`` (the question's name signature, ``ledger.scope``). Rows
    written before it keep ``NULL``: their harm applies to the same question only, as the
    names of a question the ledger holds no text of cannot be derived (the conservative
    direction: a similar question pays its own verified clearance, then has its own row).
    Replaces the lookup index (namespace, memory id, active) by (namespace, memory id,
    content hash, active, cleared at), which lets a lookup read only a memory's most recent
    clearances (``scope_state.ROWS_PER_MEMORY``). A database created at version 2 by this
    package already has the table's current shape, so each step runs only when needed.
    """
    table = schema.memory_scopes
    present = {c["name"] for c in inspect(connection).get_columns(table.name)}
    if "names" not in present:
        column = table.c.names
        kind = column.type.compile(dialect=connection.dialect)
        connection.execute(DDL(f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}"))
    connection.execute(DDL("DROP INDEX IF EXISTS ix_meclear_memory_scopes_lookup"))
    for index in table.indexes:
        index.create(connection, checkfirst=True)


def _v4_harm_texts(connection: Connection) -> None:
    """The content index of verified harm (``content``), backfilled from the history.

    Creates ``meclear_harm_texts`` / ``meclear_harm_text_keys`` and the (namespace, content
    hash, active, cleared at) index of ``meclear_memory_scopes``, then indexes every memory
    a verified run cleared: by content hash always, by normalised text and near-duplicate
    keys where the ledger kept texts.
    """
    from .content import backfill_harm_texts

    schema.metadata.create_all(connection, tables=[schema.harm_texts, schema.harm_text_keys])
    for index in schema.memory_scopes.indexes:
        index.create(connection, checkfirst=True)
    backfill_harm_texts(connection)


def _v5_writeback(connection: Connection) -> None:
    """Review decisions and tombstones (reviews written back to the memory store)."""
    schema.metadata.create_all(
        connection, tables=[schema.review_decisions, schema.tombstones], checkfirst=True
    )


def _v6_feedback_authority(connection: Connection) -> None:
    """The authority of each feedback (``end_user``, ``reviewer``, ``operator``).

    Adds the column ``authority`` to ``meclear_feedback``. Feedback recorded before it keeps
    ``NULL``, read as ``end_user`` (the safe direction: an old verdict never settles a harm
    for other users by itself); every old row and the runs it led to stay as they were.
    """
    table = schema.feedback
    present = {c["name"] for c in inspect(connection).get_columns(table.name)}
    if "authority" not in present:
        column = table.c.authority
        kind = column.type.compile(dialect=connection.dialect)
        connection.execute(DDL(f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}"))


MIGRATIONS: list[tuple[int, str, Callable[[Connection], None]]] = [
    (1, "runs, memories, candidates, feedback, memory events", _v1_initial),
    (2, "per memory and question state (scoped harm, O(K) lookups)", _v2_memory_scopes),
    (3, "name signatures and a bounded lookup index in the scope state", _v3_scope_names),
    (
        4,
        "content index of verified harm (same text under a new id, near-duplicates)",
        _v4_harm_texts,
    ),
    (5, "review decisions and tombstones (reviews written back)", _v5_writeback),
    (6, "the authority of each feedback (end user, reviewer, operator)", _v6_feedback_authority),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The schema version this package writes."""


def current_version(connection: Connection) -> int:
    """The highest applied version (0 for an empty database).

    Args:
        connection: A connection.

    Returns:
        The version.
    """
    if not inspect(connection).has_table(schema.schema_version.name):
        return 0
    version = connection.execute(select(func.max(schema.schema_version.c.version))).scalar()
    return int(version or 0)


def migrate(engine: Engine) -> int:
    """Bring the database up to :data:`SCHEMA_VERSION`; returns the version before.

    Args:
        engine: The ledger's engine.

    Returns:
        The version before the migration.

    Raises:
        SchemaVersionError: The database is newer than this package.
    """
    with write_transaction(engine) as connection:
        lock_for_migration(connection)
        schema.metadata.create_all(connection, tables=[schema.schema_version])
        before = current_version(connection)
        if before > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"the ledger database has schema version {before}, newer than this package "
                f"supports ({SCHEMA_VERSION}): upgrade meclear-integrations"
            )
        for version, description, apply in MIGRATIONS:
            if version <= before:
                continue
            apply(connection)
            connection.execute(
                schema.schema_version.insert().values(
                    version=version, description=description, applied_at=datetime.now(UTC)
                )
            )
    return before


def check_version(engine: Engine) -> int:
    """The database's version; raises :class:`SchemaVersionError` unless it is current.

    Args:
        engine: The ledger's engine.

    Returns:
        The version.

    Raises:
        SchemaVersionError: The database is not at :data:`SCHEMA_VERSION`.
    """
    with engine.connect() as connection:
        version = current_version(connection)
    if version != SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the ledger database has schema version {version}, this package needs "
            f"{SCHEMA_VERSION}: run `meclear ledger migrate` (or open it with create=True)"
        )
    return version
