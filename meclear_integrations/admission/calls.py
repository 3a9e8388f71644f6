"""One model call with strict parsing and a bounded tenacity retry, sync and async.

Every attempt counts as a model call. An attempt fails when the model raises or its output
does not parse; the next attempt repeats the prompt, with the parse error appended as
feedback. Each attempt's model call holds a slot of the runner's
:class:`~meclear_integrations.runtime.limiter.CallLimiter`, when it has one (parsing and backoff
waits hold none). After ``max_parse_attempts`` the call yields a :class:`CallFailure`, never a
guessed value; its error text and last output are redacted (no API key a provider error or
a hostile candidate put there reaches the decision).
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
    wait_none,
)

from ..core.concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..core.failures.kind import failure_kind
from ..core.redaction import redact
from ..judges.model import FormatLadder, is_prose, offered_formats, request
from ..runtime.limiter import CallLimiter, alimited, limited
from .config import AdmissionConfig
from .decision import AdmissionCost, CallFailure, Stage
from .labels import ProbeRole
from .model import TextModel
from .outputs import OutputParseError, parse_output, parse_text_response

__all__ = ["CallMeter", "CallResult", "CallRunner", "ModelCall"]


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One prompt for one stage; ``schema`` None means a free-text answer."""

    stage: Stage
    prompt: str
    schema: type[BaseModel] | None = None
    role: ProbeRole | None = None


@dataclass(frozen=True, slots=True)
class CallResult:
    """A parsed value, or the failure after every attempt."""

    call: ModelCall
    value: Any = None
    failure: CallFailure | None = None

    @property
    def ok(self) -> bool:
        """Whether the call produced a parsed value."""
        return self.failure is None


@dataclass
class CallMeter:
    """Thread-safe counts of model invocations, failed attempts and latency."""

    calls: Counter[str] = field(default_factory=Counter)
    failed_attempts: int = 0
    latency_seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, stage: str, seconds: float, failed: bool) -> None:
        """Count one model invocation.

        Args:
            stage: The admission stage that made the call.
            seconds: Its latency.
            failed: Whether the attempt failed.
        """
        with self._lock:
            self.calls[stage] += 1
            self.latency_seconds += seconds
            self.failed_attempts += int(failed)

    def cost(self, wall_seconds: float) -> AdmissionCost:
        """The admission cost so far.

        Args:
            wall_seconds: The decision's wall-clock time.

        Returns:
            The calls, failed attempts and latency, by stage.
        """
        with self._lock:
            return AdmissionCost(
                model_calls=sum(self.calls.values()),
                failed_attempts=self.failed_attempts,
                calls_by_stage=dict(self.calls),
                latency_seconds=self.latency_seconds,
                wall_seconds=wall_seconds,
            )


class _AttemptFailed(Exception):
    def __init__(
        self, message: str, output: str | None, parse: bool, transient: bool = False
    ) -> None:
        super().__init__(message)
        self.output = output
        self.parse = parse
        self.transient = transient


def _feedback(prompt: str, error: _AttemptFailed | None) -> str:
    if error is None or not error.parse:
        return prompt
    return (
        f"{prompt}\n\nYour previous reply was rejected ({error}). Reply again with exactly "
        "the requested format and nothing else."
    )


def _as_text(output: object) -> str:
    try:
        if isinstance(output, Mapping):
            return json.dumps(dict(output), ensure_ascii=False, default=str)[:MAX_KEPT_CHARS]
        return str(output)[:MAX_KEPT_CHARS]
    except Exception:  # an output that cannot even be printed
        return f"<unprintable {type(output).__name__}>"


MAX_KEPT_CHARS = 100_000
"""Longest raw output text handled for diagnosis (before ``max_output_chars``)."""


class CallRunner:
    """Runs :class:`ModelCall` s against one model under one config, metering every attempt.

    Args:
        model: The text model.
        config: Retries, timeouts and output limits.
        meter: Counts every attempt.
        limiter: Bounds the model calls in flight (shared with other runners); None: off.
    """

    def __init__(
        self,
        model: TextModel,
        config: AdmissionConfig,
        meter: CallMeter,
        *,
        limiter: CallLimiter | None = None,
    ) -> None:
        self.model = model
        self.config = config
        self.meter = meter
        self.limiter = limiter
        self._structured = config.use_structured_output and bool(offered_formats(model))

    def _policy(self) -> dict[str, Any]:
        backoff = self.config.retry_backoff_seconds
        return {
            "stop": stop_after_attempt(self.config.max_parse_attempts),
            "wait": wait_exponential(multiplier=backoff, max=30) if backoff > 0 else wait_none(),
            "retry": retry_if_exception_type(_AttemptFailed),
        }

    def _parse(self, call: ModelCall, output: object) -> Any:
        if call.schema is None:
            return parse_text_response(output)  # type: ignore[arg-type]
        return parse_output(call.schema, output)  # type: ignore[arg-type]

    def _finish(self, call: ModelCall, started: float, output: object) -> Any:
        try:
            value = self._parse(call, output)
        except Exception as exc:  # OutputParseError; anything else is misbehaviour too
            self.meter.record(call.stage, time.perf_counter() - started, failed=True)
            message = str(exc) if isinstance(exc, OutputParseError) else repr(exc)[:300]
            raise _AttemptFailed(message, _as_text(output), parse=True) from exc
        self.meter.record(call.stage, time.perf_counter() - started, failed=False)
        return value

    def _model_error(self, call: ModelCall, started: float, exc: Exception) -> _AttemptFailed:
        self.meter.record(call.stage, time.perf_counter() - started, failed=True)
        return _AttemptFailed(
            redact(f"model raised {type(exc).__name__}: {exc}")[:1000],
            None,
            parse=False,
            transient=failure_kind(exc) == "transient",
        )

    def _failure(self, call: ModelCall, error: _AttemptFailed, attempts: int) -> CallResult:
        output = error.output
        if output is not None:
            output = redact(output)[: self.config.max_output_chars]
        return CallResult(
            call=call,
            failure=CallFailure(
                stage=call.stage,
                role=call.role,
                attempts=attempts,
                error=redact(str(error))[:1000],
                last_output=output,
                transient=error.transient,
            ),
        )

    def _ladder(self, call: ModelCall) -> tuple[FormatLadder, dict[str, Any] | None]:
        """The formats of this call's endpoint (``judges.model``) and its schema."""
        structured = self._structured and call.schema is not None
        schema = call.schema.model_json_schema() if call.schema is not None else None
        return FormatLadder(self.model, structured=structured), schema

    def _completing(self, call: ModelCall, prompt: str) -> Steps[object]:
        """The reply in the strongest format the endpoint honours (a step per request).

        json_schema -> json_object -> text; a rejected or ignored format is remembered and
        never retried.
        """
        ladder, schema = self._ladder(call)
        for fmt in ladder.formats:
            try:
                output = yield Call(*request(self.model, fmt, prompt, schema))
                if fmt != "text" and is_prose(output):
                    raise ladder.ignored(fmt, output)
            except Exception as exc:
                if fmt != "text" and ladder.failed(fmt, exc):
                    continue
                raise
            ladder.succeeded(fmt)
            return output
        raise ladder.exhausted()

    def _attempt(self, call: ModelCall, prompt: str) -> Call:
        """One attempt's model call (its format ladder), holding a slot of the limiter."""

        def sync() -> object:
            with limited(self.limiter):
                return run_steps(self._completing(call, prompt))

        async def asynchronous() -> object:
            async with alimited(self.limiter):
                return await arun_steps(self._completing(call, prompt))

        return Call(sync, asynchronous)

    def _running(self, call: ModelCall) -> Steps[CallResult]:
        """:meth:`run`'s steps: the attempts and the waits between them (tenacity's policy)."""
        last: _AttemptFailed | None = None
        attempts = 0
        waits: list[float] = []  # tenacity's backoff, taken as a step (time or asyncio sleep)
        try:
            for attempt in Retrying(reraise=False, sleep=waits.append, **self._policy()):
                if waits:
                    yield _pause(waits.pop())
                with attempt:
                    attempts += 1
                    prompt = _feedback(call.prompt, last)
                    started = time.perf_counter()
                    try:
                        output = yield self._attempt(call, prompt)
                    except Exception as exc:
                        last = self._model_error(call, started, exc)
                        raise last from exc
                    try:
                        return CallResult(call=call, value=self._finish(call, started, output))
                    except _AttemptFailed as exc:
                        last = exc
                        raise
        except RetryError:
            pass
        assert last is not None
        return self._failure(call, last, attempts)

    def run(self, call: ModelCall) -> CallResult:
        """Synchronous call with bounded retries.

        Args:
            call: The prompt and the parser of its reply.

        Returns:
            The parsed value, or the failure after every attempt.
        """
        return run_steps(self._running(call))

    async def arun(self, call: ModelCall) -> CallResult:
        """Async :meth:`run`: the same steps (one flow), its argument and result."""
        return await arun_steps(self._running(call))


def _pause(seconds: float) -> Call:
    """A backoff wait: ``time.sleep`` on the sync path, ``asyncio.sleep`` on the loop."""
    return Call(functools.partial(time.sleep, seconds), functools.partial(asyncio.sleep, seconds))
