"""``DedupTextModel``'s sync and async calls take the same steps (one flow, ``step_driver``).

The same script of prompts (text, JSON schema, JSON object; repeats, an eviction, a failing
call) on a scripted model (SIMULATED: no LLM) gives the same wrapped calls, replies,
errors, hits and misses on both paths; concurrent identical prompts (threads on the sync
path, tasks on the async one) share one call, its reply or its error, never cached.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from meclear_integrations.admission.dedup import DedupTextModel

SCHEMA = {"title": "A", "properties": {"x": {"type": "string"}}}


class Scripted:
    """Replies ``prompt`` upper-cased; a prompt starting with ``fail`` raises, once."""

    def __init__(self, delay: float = 0.0) -> None:
        self.log: list[tuple[str, str]] = []
        self.failed: set[str] = set()
        self.delay = delay
        self._lock = threading.Lock()

    def _reply(self, kind: str, prompt: str) -> Any:
        with self._lock:
            self.log.append((kind, prompt))
            fail = prompt.startswith("fail") and prompt not in self.failed
            self.failed.add(prompt)
        if fail:
            raise RuntimeError(f"provider down on {prompt}")
        return prompt.upper() if kind == "text" else {kind: prompt}

    def complete(self, prompt: str) -> str:
        time.sleep(self.delay)
        return self._reply("text", prompt)

    async def acomplete(self, prompt: str) -> str:
        await asyncio.sleep(self.delay)
        return self._reply("text", prompt)

    def complete_json(self, prompt: str, schema: Any) -> Any:
        return self._reply("json", prompt)

    async def acomplete_json(self, prompt: str, schema: Any) -> Any:
        return self._reply("json", prompt)

    def complete_json_object(self, prompt: str, schema: Any) -> Any:
        return self._reply("object", prompt)

    async def acomplete_json_object(self, prompt: str, schema: Any) -> Any:
        return self._reply("object", prompt)


SCRIPT = [
    ("complete", "a"),
    ("complete", "a"),
    ("complete_json", "a"),
    ("complete_json_object", "a"),
    ("complete_json", "a"),
    ("complete", "b"),  # evicts the oldest of max_entries=3
    ("complete", "a"),
    ("complete", "fail-1"),
    ("complete", "fail-1"),  # the failure was not cached
    ("complete", "fail-1"),
]


def _run(mode: str, model: DedupTextModel, method: str, prompt: str) -> Any:
    args = (prompt,) if method == "complete" else (prompt, SCHEMA)
    try:
        if mode == "sync":
            return getattr(model, method)(*args)
        return asyncio.run(getattr(model, "a" + method)(*args))
    except RuntimeError as exc:
        return ("error", str(exc))


def test_both_paths_answer_a_script_alike() -> None:
    seen = {}
    for mode in ("sync", "async"):
        inner = Scripted()
        model = DedupTextModel(inner, max_entries=3)
        replies = [_run(mode, model, method, prompt) for method, prompt in SCRIPT]
        seen[mode] = (replies, inner.log, model.hits, model.misses, list(model._cache))
    assert seen["sync"] == seen["async"]
    replies, log, hits, misses, _ = seen["sync"]
    assert replies[7] == ("error", "provider down on fail-1") and replies[8] == "FAIL-1"
    assert (hits, misses) == (3, 7) and len(log) == misses  # the "a" text reply was evicted


@pytest.mark.parametrize("prompt", ["shared", "fail-shared"])
def test_concurrent_prompts_share_one_call_on_both_paths(prompt: str) -> None:
    seen = {}
    for mode in ("sync", "async"):
        inner = Scripted(delay=0.05)
        model = DedupTextModel(inner)

        def one(_: int, m: DedupTextModel = model) -> Any:
            try:
                return m.complete(prompt)
            except RuntimeError as exc:
                return ("error", str(exc))

        async def aone(m: DedupTextModel = model) -> Any:
            try:
                return await m.acomplete(prompt)
            except RuntimeError as exc:
                return ("error", str(exc))

        async def many() -> list[Any]:
            return list(await asyncio.gather(*(aone() for _ in range(4))))

        if mode == "sync":
            with ThreadPoolExecutor(4) as pool:
                replies = list(pool.map(one, range(4)))
        else:
            replies = asyncio.run(many())
        again = one(0)  # after the flight: from the cache, or a new call after a failure
        seen[mode] = (replies, again, inner.log, model.hits, model.misses)
    assert seen["sync"] == seen["async"]
    replies, again, log, hits, misses = seen["sync"]
    assert len(set(map(str, replies))) == 1 and (hits, misses) == (
        (4, 1) if prompt == "shared" else (3, 2)
    )
    assert again == prompt.upper() and len(log) == misses


class _LockThatLetsACallerIn:
    """The model's lock, letting a second caller in on another thread at one release.

    At the first release of the lock by the calling thread after the wrapped model answered,
    another thread asks the same prompt (and is joined): it arrives exactly when the flight
    has ended on the first thread's side, the window a busy machine opens at random.
    """

    def __init__(self, model: DedupTextModel, wrapped: Scripted, prompt: str) -> None:
        self._lock = threading.Lock()
        self.model, self.wrapped, self.prompt = model, wrapped, prompt
        self.owner = threading.get_ident()
        self.second: list[str] = []

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
        ready = self.wrapped.log and not self.second and threading.get_ident() == self.owner
        if ready:
            self.second.append("asking")
            other = threading.Thread(target=lambda: self.second.append(self._ask()))
            other.start()
            other.join(timeout=10)

    def _ask(self) -> str:
        return self.model.complete(self.prompt)


def test_a_caller_arriving_as_a_flight_ends_finds_the_reply_cached() -> None:
    """No window between a flight's end and its reply's caching: the prompt is sent once.

    Under load a caller could find the flight gone and the reply not cached yet, send the
    prompt again and count a second miss (an admission bench's sent calls then exceeded
    what its server saw).
    """
    wrapped = Scripted()
    model = DedupTextModel(wrapped)
    gate = _LockThatLetsACallerIn(model, wrapped, "same")
    model._lock = gate  # type: ignore[assignment]
    assert model.complete("same") == "SAME"
    assert gate.second == ["asking", "SAME"]
    assert wrapped.log == [("text", "same")]
    assert (model.misses, model.hits) == (1, 1)
