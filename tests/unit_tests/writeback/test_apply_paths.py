"""The sync and async write-backs take the same steps: the store's sync methods on one path,
its native async twins on the other; a store's error is the plan's to report, a ledger's ends
the operation on both paths."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from meclear_integrations.ledger import HarmLedger
from meclear_integrations.writeback import (
    StoreAdapter,
    StoredMemory,
    aapply_reviews,
    accept_review,
    apply_reviews,
    arestore_memory,
    restore_memory,
)
from tests.support.ledger import clear
from tests.unit_tests.writeback.conftest import IDS, QUESTIONS, memories


class Recording(StoreAdapter):
    """A dict store that logs every call by name (sync and async methods told apart)."""

    label = "test:recording"

    def __init__(self, refuse: bool = False) -> None:
        self.items = {m.id: m.content for m in memories(*IDS)}
        self.calls: list[str] = []
        self.refuse = refuse

    def _fetch(self, memory_id: str) -> StoredMemory | None:
        text = self.items.get(memory_id)
        if text is None:
            return None
        return StoredMemory(memory_id, text, {"id": memory_id, "text": text})

    def _remove(self, memory_id: str) -> None:
        if self.refuse:
            raise PermissionError("read-only replica")
        del self.items[memory_id]

    def fetch(self, memory_id: str) -> StoredMemory | None:
        self.calls.append(f"fetch {memory_id}")
        return self._fetch(memory_id)

    def remove(self, memory_id: str) -> None:
        self.calls.append(f"remove {memory_id}")
        self._remove(memory_id)

    def put_back(self, payload: dict[str, Any]) -> None:
        self.calls.append(f"put_back {payload['id']}")
        self.items[payload["id"]] = payload["text"]

    async def afetch(self, memory_id: str) -> StoredMemory | None:
        self.calls.append(f"afetch {memory_id}")
        return self._fetch(memory_id)

    async def aremove(self, memory_id: str) -> None:
        self.calls.append(f"aremove {memory_id}")
        self._remove(memory_id)

    async def aput_back(self, payload: dict[str, Any]) -> None:
        self.calls.append(f"aput_back {payload['id']}")
        self.items[payload["id"]] = payload["text"]


def _run(mode: str, sync: Any, asynchronous: Any, *args: Any, **kwargs: Any) -> Any:
    if mode == "async":
        return asyncio.run(asynchronous(*args, **kwargs))
    return sync(*args, **kwargs)


def _ledger(path: Any) -> HarmLedger:
    """A ledger that proposes ``stale`` (as the ``ledger`` fixture)."""
    ledger = HarmLedger(path, store_text=True)
    for q in QUESTIONS:
        context = memories(*IDS)
        ledger.record(clear(context, {"g"}, {"stale"}), query=q, context=context)
    return ledger


@pytest.mark.parametrize("refuse", [False, True])
def test_both_paths_take_the_same_steps_on_their_own_methods(tmp_path, refuse):
    runs = {}
    for mode in ("sync", "async"):
        with _ledger(tmp_path / f"{mode}.db") as ledger:
            accept_review(ledger, "stale", actor="ana")
            store = Recording(refuse=refuse)
            outcomes = _run(mode, apply_reviews, aapply_reviews, ledger, store, ["g", "stale"])
            restored = _run(mode, restore_memory, arestore_memory, ledger, store, "stale")
            runs[mode] = (outcomes, restored, store.calls)
    (s_out, s_back, s_calls), (a_out, a_back, a_calls) = runs["sync"], runs["async"]
    assert [(o.memory_id, o.action) for o in s_out] == [(o.memory_id, o.action) for o in a_out]
    assert s_back.action == a_back.action
    assert s_calls and not any(c.startswith("a") for c in s_calls)
    assert all(c.startswith("a") for c in a_calls)
    assert [c.removeprefix("a") for c in a_calls] == s_calls
    if refuse:
        assert [o.action for o in s_out] == ["not_accepted", "failed"]
        assert s_back.action == "not_in_tombstone"
        assert s_calls == ["fetch stale", "remove stale"]
    else:
        assert [o.action for o in s_out] == ["not_accepted", "retired"]
        assert s_back.action == "restored"
        # retire: read, remove, check it is gone; restore: absent, put back, check it is back
        assert s_calls == [
            "fetch stale",
            "remove stale",
            "fetch stale",
            "fetch stale",
            "put_back stale",
            "fetch stale",
        ]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_ledger_error_ends_the_operation_before_the_store_is_touched(ledger, mode, monkeypatch):
    import meclear_integrations.writeback.apply as apply

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ledger down")

    accept_review(ledger, "stale", actor="ana")
    monkeypatch.setattr(apply, "active_tombstone", broken)
    store = Recording()
    with pytest.raises(RuntimeError, match="ledger down"):
        _run(mode, apply_reviews, aapply_reviews, ledger, store)
    with pytest.raises(RuntimeError, match="ledger down"):
        _run(mode, restore_memory, arestore_memory, ledger, store, "stale")
    assert store.calls == []
