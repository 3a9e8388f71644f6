"""A LangChain chat model that injects faults into a wrapped model (for ``meclear soak``).

On a seeded random ``fault_rate`` share of calls it raises one of: ``TimeoutError``, HTTP
429 with ``retry-after-ms``, HTTP 429 without it, HTTP 500, ``ConnectionError`` (all
transient, so retried), or returns a garbage completion (``%%% <garbage> %%%``: a wrong
answer for the agent, an unreadable verdict for a judge). Otherwise it delegates.
Calls whose messages contain ``outage_marker`` always fault: a deterministic,
query-specific outage, independent of how concurrent calls interleave.
"""

from __future__ import annotations

import asyncio
import random
import threading
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

__all__ = ["FAULT_KINDS", "FaultyChatModel", "SimulatedHTTPError"]

FAULT_KINDS = ("timeout", "429", "429-no-retry-after", "500", "connection", "garbage")
"""The faults injected, drawn uniformly."""


class _Response:
    def __init__(self, status_code: int, headers: dict[str, str]) -> None:
        self.status_code = status_code
        self.headers = headers


class SimulatedHTTPError(Exception):
    """An HTTP error shaped like a provider client's (``status_code``, ``response``)."""

    def __init__(self, status_code: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"simulated HTTP {status_code}")
        self.status_code = status_code
        self.response = _Response(status_code, headers or {})


class FaultyChatModel(BaseChatModel):
    """Wraps ``inner`` and injects faults on a seeded random share of calls."""

    inner: BaseChatModel
    """The model answering when no fault is injected."""
    fault_rate: float = 0.1
    """Share of calls that fail or return garbage."""
    seed: int = 0
    """Seed of the fault draws."""
    kinds: tuple[str, ...] = FAULT_KINDS
    """Which faults may be injected."""
    outage_marker: str | None = None
    """Calls whose messages contain this text always fault (``None``: no outage)."""

    _rng: random.Random = PrivateAttr()
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _calls: int = PrivateAttr(default=0)
    _faults: int = PrivateAttr(default=0)

    def model_post_init(self, context: Any, /) -> None:
        self._rng = random.Random(self.seed)

    @property
    def calls(self) -> int:
        """Calls made so far."""
        return self._calls

    @property
    def faults(self) -> int:
        """Faults injected so far."""
        return self._faults

    @property
    def _llm_type(self) -> str:
        return "meclear-faulty"

    def _draw(self, messages: list[BaseMessage]) -> str | None:
        outage = self.outage_marker is not None and any(
            self.outage_marker in str(m.content) for m in messages
        )
        with self._lock:
            self._calls += 1
            if not outage and self._rng.random() >= self.fault_rate:
                return None
            self._faults += 1
            return self._rng.choice(self.kinds)

    @staticmethod
    def _raise_or_garbage(kind: str) -> ChatResult:
        if kind == "timeout":
            raise TimeoutError("simulated model timeout")
        if kind == "429":
            raise SimulatedHTTPError(429, {"retry-after-ms": "1"})
        if kind == "429-no-retry-after":
            raise SimulatedHTTPError(429)
        if kind == "500":
            raise SimulatedHTTPError(500)
        if kind == "connection":
            raise ConnectionError("simulated connection reset")
        message = AIMessage(content="%%% <garbage> %%%")
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        kind = self._draw(messages)
        if kind is not None:
            return self._raise_or_garbage(kind)
        return self.inner._generate(messages, stop=stop, **kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        await asyncio.sleep(0)
        kind = self._draw(messages)
        if kind is not None:
            return self._raise_or_garbage(kind)
        return await self.inner._agenerate(messages, stop=stop, **kwargs)
