"""Scripted evaluators and provider-shaped errors for fault injection."""

from __future__ import annotations

import threading
from collections.abc import Callable

from meclear_integrations import Memory

ValueFn = Callable[[frozenset[str]], float]


class HTTPError(Exception):
    """Shaped like a provider client's status error (``status_code``, ``response``)."""

    class _Response:
        def __init__(self, status: int, headers: dict[str, str]) -> None:
            self.status_code = status
            self.headers = headers

    def __init__(self, status: int, headers: dict[str, str] | None = None, msg: str = "") -> None:
        super().__init__(msg or f"HTTP {status}")
        self.status_code = status
        self.response = self._Response(status, headers or {})


def redundant_value(ids: frozenset[str]) -> float:
    """m1 and m2 are a redundant harmful pair (either alone keeps the answer wrong)."""
    return 0.0 if ids & {"m1", "m2"} else 1.0


def memories(k: int) -> list[Memory]:
    return [Memory(id=f"m{i}", content=f"memory number {i}") for i in range(k)]


class ScriptedEvaluator:
    """Evaluator over a value function that raises on chosen calls.

    ``faults`` maps a 1-based call number to the exception raised on that call. Every
    call is recorded.
    """

    def __init__(self, value: ValueFn = redundant_value, faults: dict | None = None) -> None:
        self.value = value
        self.faults = dict(faults or {})
        self.calls: list[tuple[frozenset[str], int]] = []
        self._lock = threading.Lock()

    def _next(self, coalition: tuple[Memory, ...], trial: int) -> BaseException | None:
        with self._lock:
            self.calls.append((frozenset(m.id for m in coalition), trial))
            return self.faults.get(len(self.calls))

    def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        fault = self._next(coalition, trial)
        if fault is not None:
            raise fault
        return self.value(frozenset(m.id for m in coalition))


class AsyncScriptedEvaluator(ScriptedEvaluator):
    async def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:  # type: ignore[override]
        fault = self._next(coalition, trial)
        if fault is not None:
            raise fault
        return self.value(frozenset(m.id for m in coalition))
