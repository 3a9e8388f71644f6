"""ClearingStore on LangGraph's PostgresStore, against the server at MECLEAR_TEST_POSTGRES_URL.

Every store the checks make is a fresh, empty PostgresStore in its own schema of the test's
own database (``tests.support.postgres``); the checks are the ones the InMemoryStore passes
(``tests.support.stores``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest

from tests.support.postgres import postgres_url  # noqa: F401  (fixture)
from tests.support.stores import (
    check_behaves_as_the_store,
    check_clears_and_gates,
    check_hostile_namespaces,
)

psycopg = pytest.importorskip("psycopg")
PostgresStore = pytest.importorskip("langgraph.store.postgres").PostgresStore


@pytest.fixture
def make_store(postgres_url: str) -> Iterator[Callable[[], object]]:  # noqa: F811
    """Fresh PostgresStores (one schema each), closed after the test."""
    url = postgres_url.replace("postgresql+psycopg://", "postgresql://", 1)
    separator = "&" if "?" in url else "?"
    with ExitStack() as stack:

        def make() -> object:
            schema = f"store_{uuid.uuid4().hex[:12]}"
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'CREATE SCHEMA "{schema}"')
            conninfo = f"{url}{separator}options=-csearch_path%3D{schema}"
            store = stack.enter_context(PostgresStore.from_conn_string(conninfo))
            store.setup()
            return store

        yield make


@pytest.mark.slow
def test_behaves_as_the_wrapped_store(make_store, case) -> None:
    check_behaves_as_the_store(make_store, case)


@pytest.mark.slow
def test_clears_searches_and_gates_puts(make_store, case) -> None:
    check_clears_and_gates(make_store, case)


@pytest.mark.slow
def test_hostile_namespaces(make_store, case) -> None:
    check_hostile_namespaces(make_store, case)


@pytest.mark.slow
def test_async_postgres_store(postgres_url: str, case) -> None:  # noqa: F811
    """The async PostgresStore: aput, a cleared asearch and the rest, all on the event loop."""
    import asyncio

    from langgraph.store.postgres.aio import AsyncPostgresStore

    from meclear_integrations.langchain import SimulatedChatModel
    from meclear_integrations.langgraph import ClearingStore
    from tests.support.stores import NAMESPACE, asearch_in_run

    url = postgres_url.replace("postgresql+psycopg://", "postgresql://", 1)

    async def scenario() -> tuple[list[str], list[str], object]:
        async with AsyncPostgresStore.from_conn_string(url) as inner:
            await inner.setup()
            store = ClearingStore(inner, llm=SimulatedChatModel.from_case(case))
            for m in case.memories:
                await store.aput(NAMESPACE, m.id, {"content": m.content})
            raw = [i.key for i in await inner.asearch(NAMESPACE, limit=10)]
            kept = await asearch_in_run(store, case)
            return raw, kept, await store.aget(NAMESPACE, "f1")

    raw, kept, item = asyncio.run(scenario())
    assert kept == [k for k in raw if k not in ("f1", "f2")]
    assert item is not None and item.value == {"content": case.texts["f1"]}
