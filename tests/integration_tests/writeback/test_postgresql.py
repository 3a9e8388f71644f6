"""Reviews written back with the ledger on PostgreSQL and LangGraph's PostgresStore (the CI's
PostgreSQL server), sync and async: retire, apply twice, restore byte for byte."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langgraph.store.postgres")

from meclear_integrations.ledger import HarmLedger
from meclear_integrations.ledger.tombstones import tombstone_events
from meclear_integrations.writeback import (
    aapply_reviews,
    accept_review,
    apply_reviews,
    arestore_memory,
    restore_memory,
)
from tests.support.ledger import clear, memories
from tests.support.postgres import postgres_url  # noqa: F401  (fixture)

QUESTIONS = ("Where does Ana live?", "Which city is Ana's home?", "Ana lives where?")
NAMESPACE = ("users", "ana/ü 🙂 'x'")


def _ledger(url: str) -> HarmLedger:
    ledger = HarmLedger(url, store_text=True)
    for q in QUESTIONS:
        context = memories("g", "stale", "bg")
        ledger.record(clear(context, {"g"}, {"stale"}), query=q, context=context)
    return ledger


def _plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def test_postgres_store_sync(postgres_url: str) -> None:  # noqa: F811
    from langgraph.store.postgres import PostgresStore

    with (
        PostgresStore.from_conn_string(_plain(postgres_url)) as store,
        _ledger(postgres_url) as ledger,
    ):
        store.setup()
        for i, m in enumerate(memories("g", "stale", "bg")):
            store.put(NAMESPACE, m.id, {"content": m.content, "turn": i})
        before = store.get(NAMESPACE, "stale").value
        accept_review(ledger, "stale", actor="ana", reason="moved")
        (dry,) = apply_reviews(ledger, store, namespace=NAMESPACE, dry_run=True)
        assert dry.action == "would_retire" and store.get(NAMESPACE, "stale") is not None
        (done,) = apply_reviews(ledger, store, namespace=NAMESPACE, actor="ops")
        assert done.action == "retired" and store.get(NAMESPACE, "stale") is None
        assert sorted(i.key for i in store.search(NAMESPACE)) == ["bg", "g"]
        (again,) = apply_reviews(ledger, store, ["stale"], namespace=NAMESPACE)
        assert again.action == "already_retired"
        back = restore_memory(ledger, store, "stale", namespace=NAMESPACE, actor="ana")
        assert back.action == "restored" and store.get(NAMESPACE, "stale").value == before
        assert [e.event for e in tombstone_events(ledger)] == ["retired", "restored"]


def test_postgres_store_async(postgres_url: str) -> None:  # noqa: F811
    from langgraph.store.postgres.aio import AsyncPostgresStore

    async def scenario() -> None:
        async with AsyncPostgresStore.from_conn_string(_plain(postgres_url)) as store:
            await store.setup()
            for m in memories("g", "stale", "bg"):
                await store.aput(NAMESPACE, m.id, {"content": m.content})
            with _ledger(postgres_url) as ledger:
                accept_review(ledger, "stale", actor="ana")
                (done,) = await aapply_reviews(ledger, store, namespace=NAMESPACE)
                assert done.action == "retired"
                assert await store.aget(NAMESPACE, "stale") is None
                back = await arestore_memory(ledger, store, "stale", namespace=NAMESPACE)
                assert back.action == "restored"
                item = await store.aget(NAMESPACE, "stale")
                assert item.value == {"content": "text of stale"}

    asyncio.run(scenario())
