"""Identical admission prompts answered once: a bounded cache with in-flight sharing.

ConMem sends many prompts that recur word for word: the control response of an
irrelevant probe does not depend on the candidate, candidates drawn from the same turn
share probes, and the sensitivity grid and ablations re-ask the tie-break judge about the
same evidence. :class:`DedupTextModel` wraps any
:class:`~meclear_integrations.admission.model.TextModel` so that a prompt already answered
(or being answered, on another thread or task) is not sent again. Use it with a
deterministic model (temperature 0, as in the paper): a sampling model's repeated prompt
then shares one sample. Only successful replies are kept; a raising call is not cached.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future
from typing import Any

from ..core.concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..judges.model import endpoint_of, supports_json_object
from .model import TextModel, as_text_model, supports_structured_output

__all__ = ["DedupTextModel"]

_Flight = tuple[dict[Any, Any], Any, Any, Any, tuple[bool, Any]]
"""(the in-flight table, the call's slot in it, the call to wait for or None, ours or None,
(found in the cache, its value))."""


class DedupTextModel:
    """A text model that answers each distinct prompt once (module docstring).

    Args:
        model: The model to wrap (or a function ``prompt -> str``).
        max_entries: Replies kept (least recently used dropped first).

    Example:
        >>> from meclear_integrations.admission.dedup import DedupTextModel
        >>> seen = []
        >>> model = DedupTextModel(lambda p: seen.append(p) or p.upper())
        >>> model.complete("hi"), model.complete("hi"), len(seen), model.hits
        ('HI', 'HI', 1, 1)
    """

    def __init__(
        self, model: TextModel | Callable[[str], str | Awaitable[str]], *, max_entries: int = 8192
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.model = as_text_model(model)
        self.max_entries = max_entries
        self.hits = 0
        """Prompts answered from the cache or by sharing a call in flight."""
        self.misses = 0
        """Prompts sent to the wrapped model."""
        self._cache: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.Lock()
        self._flight: dict[tuple[str, str], Future[Any]] = {}
        self._aflight: dict[tuple[int, tuple[str, str]], asyncio.Future[Any]] = {}
        if supports_structured_output(self.model):
            self.complete_json = self._complete_json
            self.acomplete_json = self._acomplete_json
        if supports_json_object(self.model):
            self.complete_json_object = self._complete_json_object
            self.acomplete_json_object = self._acomplete_json_object
        self.endpoint = endpoint_of(self.model)
        """The wrapped model's endpoint key (output formats are negotiated per endpoint)."""

    # -- cache -------------------------------------------------------------------
    def _get(self, key: tuple[str, str]) -> tuple[bool, Any]:
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                self.hits += 1
                return True, self._cache[key]
        return False, None

    def _settle(self, key: tuple[str, str], value: Any, flights: dict[Any, Any], slot: Any) -> None:
        """Cache ``value`` and end its flight in one step (under the lock).

        Together, so a caller never finds the flight gone and the reply not cached yet
        (it would send the prompt again: a second call, and ``misses`` counting it).
        """
        with self._lock:
            self._cache[key] = value
            self._cache.move_to_end(key)
            while len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
            flights.pop(slot, None)

    def _claim(
        self, key: tuple[str, str], flights: dict[Any, Any], slot: Any, new: Callable[[], Any]
    ) -> _Flight:
        """The cached reply, or the call in flight under ``slot`` to wait for, or ours.

        The cache is read again under the lock: a flight may have ended since :meth:`_get`.
        """
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                self.hits += 1
                return flights, slot, None, None, (True, self._cache[key])
            waiting = flights.get(slot)
            if waiting is not None:
                self.hits += 1
                return flights, slot, waiting, None, (False, None)
            mine = flights[slot] = new()
            self.misses += 1
            return flights, slot, None, mine, (False, None)

    async def _aclaim(self, key: tuple[str, str]) -> _Flight:
        """:meth:`_claim` on the event loop: asyncio futures, shared within one loop."""
        loop = asyncio.get_running_loop()
        return self._claim(key, self._aflight, (id(loop), key), loop.create_future)

    def _once(self, key: tuple[str, str], call: Call) -> Steps[Any]:
        """``call``'s value, from the cache, shared with the same call in flight, or made.

        One flow for both paths (``core.concurrency.step_driver``): on the sync one a call in
        flight is a thread's ``concurrent.futures.Future``, on the async one a task's asyncio
        future (awaited shielded: a cancelled waiter does not cancel the call it shares).
        """
        found, value = self._get(key)
        if found:
            return value
        claim = functools.partial(self._claim, key, self._flight, key, Future)
        flights, slot, waiting, mine, cached = yield Call(
            claim, functools.partial(self._aclaim, key)
        )
        if cached[0]:
            return cached[1]
        if waiting is not None:
            return (yield Call(waiting.result, lambda: asyncio.shield(waiting)))
        try:
            value = yield call
        except BaseException as exc:
            with self._lock:
                flights.pop(slot, None)
            mine.set_exception(exc)
            mine.exception()  # retrieved: no "never retrieved" warning when nobody waits
            raise
        self._settle(key, value, flights, slot)
        mine.set_result(value)
        return value

    # -- TextModel -----------------------------------------------------------------
    def complete(self, prompt: str) -> str:
        """The wrapped model's reply to ``prompt``, sent at most once.

        Args:
            prompt: The prompt text.

        Returns:
            The reply.
        """
        return run_steps(self._once(("text", prompt), self._text(prompt)))

    async def acomplete(self, prompt: str) -> str:
        """Async :meth:`complete` (the same steps)."""
        return await arun_steps(self._once(("text", prompt), self._text(prompt)))

    def _text(self, prompt: str) -> Call:
        return Call(lambda: self.model.complete(prompt), lambda: self.model.acomplete(prompt))

    def _json(self, prompt: str, schema: Mapping[str, Any]) -> Steps[Any]:
        model: Any = self.model
        call = Call(
            lambda: model.complete_json(prompt, schema),
            lambda: model.acomplete_json(prompt, schema),
        )
        return self._once((_schema_key(schema), prompt), call)

    def _json_object(self, prompt: str, schema: Mapping[str, Any]) -> Steps[Any]:
        model: Any = self.model
        call = Call(
            lambda: model.complete_json_object(prompt, schema),
            lambda: model.acomplete_json_object(prompt, schema),
        )
        return self._once(("object:" + _schema_key(schema), prompt), call)

    def _complete_json(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        return run_steps(self._json(prompt, schema))

    async def _acomplete_json(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        return await arun_steps(self._json(prompt, schema))

    def _complete_json_object(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        return run_steps(self._json_object(prompt, schema))

    async def _acomplete_json_object(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        return await arun_steps(self._json_object(prompt, schema))


def _schema_key(schema: Mapping[str, Any]) -> str:
    return "json:" + json.dumps(schema, sort_keys=True, default=str)
