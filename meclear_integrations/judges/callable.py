"""Any function as a judge."""

from __future__ import annotations

import asyncio
import inspect
import math
import numbers
import reprlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..core.concurrency.workers import in_worker
from ..core.errors import ConfigurationTypeError
from ..core.memory import Memory
from .base import JudgeVerdict
from .errors import JudgeError

__all__ = ["CallableJudge"]

_ARGUMENTS = ("question", "answer", "reference", "context")


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    )


class CallableJudge:
    """Wraps ``fn`` returning a float in [0, 1], a bool, or a :class:`JudgeVerdict`.

    ``fn`` is called with keyword arguments, only those among ``question``, ``answer``,
    ``reference`` and ``context`` (a tuple of memories, or None) that it declares (all of
    them if it takes ``**kwargs``). It may be a plain or a coroutine function: a coroutine
    function is run on a private loop by ``score`` and awaited by ``ascore``; a plain one
    runs in a daemon worker thread under ``ascore``.

    Args:
        fn: The judge function.

    Raises:
        ConfigurationTypeError: ``fn`` does not accept an ``answer`` argument.

    Example:
        >>> from meclear_integrations.judges import CallableJudge
        >>> judge = CallableJudge(lambda answer, reference: answer == reference)
        >>> judge.score("When?", "December 2023", reference="December 2023").score
        1.0
    """

    def __init__(self, fn: Callable[..., float | bool | JudgeVerdict | Awaitable[Any]]) -> None:
        self.fn = fn
        self._async = _is_async(fn)
        params = inspect.signature(fn).parameters.values()
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            self._names: tuple[str, ...] = _ARGUMENTS
        else:
            declared = {p.name for p in params}
            self._names = tuple(n for n in _ARGUMENTS if n in declared)
        if "answer" not in self._names:
            raise ConfigurationTypeError("a judge function must accept an `answer` argument")

    def _kwargs(self, question: str, answer: str, reference: str | None, context: Any) -> dict:
        values = {
            "question": question,
            "answer": answer,
            "reference": reference,
            "context": tuple(context) if context is not None else None,
        }
        return {n: values[n] for n in self._names}

    def score(
        self,
        question: str,
        answer: str,
        *,
        reference: str | None = None,
        context: Sequence[Memory] | None = None,
    ) -> JudgeVerdict:
        """Score ``answer`` to ``question`` (as :meth:`Judge.score`)."""
        kwargs = self._kwargs(question, answer, reference, context)
        result = asyncio.run(self.fn(**kwargs)) if self._async else self.fn(**kwargs)  # type: ignore[arg-type]
        return _verdict(result)

    async def ascore(
        self,
        question: str,
        answer: str,
        *,
        reference: str | None = None,
        context: Sequence[Memory] | None = None,
    ) -> JudgeVerdict:
        """Score ``answer`` to ``question`` on the event loop (as :meth:`Judge.score`)."""
        kwargs = self._kwargs(question, answer, reference, context)
        if self._async:
            result = await self.fn(**kwargs)  # type: ignore[misc]
        else:
            result = await in_worker(lambda: self.fn(**kwargs))
        return _verdict(result)


def _verdict(result: object) -> JudgeVerdict:
    if isinstance(result, JudgeVerdict):
        return result
    if isinstance(result, bool):
        return JudgeVerdict(score=float(result), parsed_by="callable", raw=str(result))
    if isinstance(result, numbers.Real):
        try:
            value = float(result)
        except (TypeError, ValueError, OverflowError):
            value = math.nan
        if math.isfinite(value) and 0.0 <= value <= 1.0:
            return JudgeVerdict(score=value, parsed_by="callable", raw=str(value))
    raise JudgeError(
        "a judge function must return a finite number in [0, 1], a bool or a JudgeVerdict; "
        f"got {type(result).__name__} {reprlib.repr(result)}"
    )
