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
import json
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future
from typing import Any

from ..judges.model import endpoint_of, supports_json_object
from .model import TextModel, as_text_model, supports_structured_output

__all__ = ["DedupTextModel"]


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

    def _put(self, key: tuple[str, str], value: Any) -> None:
        with self._lock:
            self._cache[key] = value
            self._cache.move_to_end(key)
            while len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)

    def _sync(self, key: tuple[str, str], call: Callable[[], Any]) -> Any:
        found, value = self._get(key)
        if found:
            return value
        with self._lock:
            waiting = self._flight.get(key)
            if waiting is None:
                mine: Future[Any] = Future()
                self._flight[key] = mine
                self.misses += 1
            else:
                self.hits += 1
        if waiting is not None:
            return waiting.result()
        try:
            value = call()
        except BaseException as exc:
            mine.set_exception(exc)
            raise
        finally:
            with self._lock:
                self._flight.pop(key, None)
        self._put(key, value)
        mine.set_result(value)
        return value

    async def _async(self, key: tuple[str, str], call: Callable[[], Awaitable[Any]]) -> Any:
        found, value = self._get(key)
        if found:
            return value
        loop = asyncio.get_running_loop()
        slot = (id(loop), key)
        waiting = self._aflight.get(slot)
        if waiting is not None:
            self.hits += 1
            return await asyncio.shield(waiting)
        mine: asyncio.Future[Any] = loop.create_future()
        self._aflight[slot] = mine
        self.misses += 1
        try:
            value = await call()
        except BaseException as exc:
            mine.set_exception(exc)
            mine.exception()  # retrieved: no "never retrieved" warning when nobody waits
            raise
        finally:
            self._aflight.pop(slot, None)
        self._put(key, value)
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
        return self._sync(("text", prompt), lambda: self.model.complete(prompt))

    async def acomplete(self, prompt: str) -> str:
        """Async :meth:`complete`.

        Args:
            prompt: The prompt text.

        Returns:
            The reply.
        """
        return await self._async(("text", prompt), lambda: self.model.acomplete(prompt))

    def _complete_json(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        key = (_schema_key(schema), prompt)
        return self._sync(key, lambda: self.model.complete_json(prompt, schema))  # type: ignore[attr-defined]

    async def _acomplete_json(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        key = (_schema_key(schema), prompt)
        return await self._async(key, lambda: self.model.acomplete_json(prompt, schema))  # type: ignore[attr-defined]

    def _complete_json_object(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        key = ("object:" + _schema_key(schema), prompt)
        return self._sync(key, lambda: self.model.complete_json_object(prompt, schema))  # type: ignore[attr-defined]

    async def _acomplete_json_object(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        key = ("object:" + _schema_key(schema), prompt)
        return await self._async(key, lambda: self.model.acomplete_json_object(prompt, schema))  # type: ignore[attr-defined]


def _schema_key(schema: Mapping[str, Any]) -> str:
    return "json:" + json.dumps(schema, sort_keys=True, default=str)
