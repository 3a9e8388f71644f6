"""The versioned schema: created on open, idempotent, newer versions refused."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import inspect

from meclear_integrations.ledger import HarmLedger, SchemaVersionError
from meclear_integrations.ledger import schema as tables
from meclear_integrations.ledger.database import create_ledger_engine, ledger_url
from meclear_integrations.ledger.migrations import (
    MIGRATIONS,
    SCHEMA_VERSION,
    current_version,
    migrate,
)


def test_open_creates_every_table_at_the_current_version(ledger_url: str) -> None:
    with HarmLedger(ledger_url) as ledger:
        with ledger.engine.connect() as conn:
            assert current_version(conn) == SCHEMA_VERSION
            found = set(inspect(conn).get_table_names())
        assert {t.name for t in tables.metadata.sorted_tables} <= found
        for table in tables.metadata.sorted_tables:
            with ledger.engine.connect() as conn:
                columns = {c["name"] for c in inspect(conn).get_columns(table.name)}
            assert columns == {c.name for c in table.columns}, table.name
    assert [v for v, _, _ in MIGRATIONS] == list(range(1, SCHEMA_VERSION + 1))


def test_migrate_is_idempotent_and_keeps_data(ledger_url: str) -> None:
    engine = create_ledger_engine(ledger_url)
    try:
        assert migrate(engine) == 0
        assert migrate(engine) == SCHEMA_VERSION
    finally:
        engine.dispose()
    with HarmLedger(ledger_url) as ledger:
        ledger.restore("m1")
    with HarmLedger(ledger_url, create=False) as ledger:
        assert len(ledger.history("m1").events) == 1


def test_a_newer_schema_is_refused(ledger_url: str) -> None:
    HarmLedger(ledger_url).close()
    engine = create_ledger_engine(ledger_url)
    with engine.begin() as conn:
        conn.execute(
            tables.schema_version.insert().values(
                version=SCHEMA_VERSION + 1, description="future", applied_at=datetime.now(UTC)
            )
        )
    engine.dispose()
    with pytest.raises(SchemaVersionError, match="newer than this package"):
        HarmLedger(ledger_url)


def test_create_false_refuses_an_unmigrated_database(tmp_path) -> None:
    with pytest.raises(SchemaVersionError, match="meclear ledger migrate"):
        HarmLedger(tmp_path / "empty.db", create=False)


def test_urls_paths_and_environment(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert ledger_url(tmp_path / "a.db") == f"sqlite:///{tmp_path / 'a.db'}"
    assert ledger_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert ledger_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert ledger_url("sqlite:///x.db") == "sqlite:///x.db"
    monkeypatch.setenv("MECLEAR_LEDGER_URL", f"sqlite:///{tmp_path / 'env.db'}")
    assert ledger_url(None).endswith("env.db")
    monkeypatch.delenv("MECLEAR_LEDGER_URL")
    assert ledger_url(None) == "sqlite:///meclear-ledger.db"
    nested = tmp_path / "deep" / "er" / "l.db"
    HarmLedger(nested).close()
    assert nested.exists()


def test_version_3_adds_name_signatures_and_old_rows_match_only_their_question(
    ledger_url: str,
) -> None:
    from sqlalchemy import DDL, delete, select

    from meclear_integrations import Memory
    from tests.support.ledger import clear

    question = "When is Sam's dentist appointment?"
    reworded = "Remind me, when is Sam's dentist appointment?"
    context = [
        Memory(id="old", content="Sam's dentist appointment is on March 3."),
        Memory(id="new", content="Sam moved the dentist appointment to May 9."),
    ]
    report = clear(context, gold={"new"}, faults={"old"})
    with HarmLedger(ledger_url) as ledger:
        ledger.record(report, query=question, context=context)
        assert [h.scope for h in ledger.scoped_harm(reworded, context)] == ["similar_query"]
        s = tables.memory_scopes
        with ledger.engine.begin() as conn:  # back to a version-2 database: no names column
            conn.execute(DDL(f"ALTER TABLE {s.name} DROP COLUMN names"))
            conn.execute(DDL("DROP INDEX ix_meclear_memory_scopes_recent"))
            conn.execute(
                DDL(
                    "CREATE INDEX ix_meclear_memory_scopes_lookup "
                    f"ON {s.name} (namespace, memory_id, active)"
                )
            )
            conn.execute(delete(tables.schema_version).where(tables.schema_version.c.version > 2))
    with pytest.raises(SchemaVersionError, match=f"needs {SCHEMA_VERSION}"):
        HarmLedger(ledger_url, create=False)
    with HarmLedger(ledger_url) as ledger:  # migrates to version 3 and on
        with ledger.engine.connect() as conn:
            assert current_version(conn) == SCHEMA_VERSION >= 3
            names = conn.execute(select(s.c.memory_id, s.c.names, s.c.signature)).all()
            indexes = {i["name"] for i in inspect(conn).get_indexes(s.name)}
        assert names and all(r.names is None and r.signature for r in names)
        assert {i.name for i in s.indexes} <= indexes
        assert "ix_meclear_memory_scopes_lookup" not in indexes
        # old rows without names: their own question only (the conservative direction)
        assert [h.scope for h in ledger.scoped_harm(question, context)] == ["same_query"]
        assert ledger.scoped_harm(reworded, context) == []
        ledger.record(report, query=question, context=context)  # new evidence fills the names
        assert [h.scope for h in ledger.scoped_harm(reworded, context)] == ["similar_query"]
