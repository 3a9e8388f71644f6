"""Every model call of a real-model benchmark run: cached, budgeted, rate-limited, retried, counted.

A :class:`ModelClient` serves one role (agent, judge or rater) over the package's own
LangChain adapter (:func:`meclear_integrations.langchain.model.as_text_model`), so the
benchmark's calls are the integrations' calls. One call:

1. looks its reply up in the :class:`~.cache.ResponseCache` (a hit costs nothing and is
   charged at its stored token count; a free-text judge reply is re-bound to the asking
   call's verdict nonce);
2. otherwise reserves a place under the run's :class:`CallLimits` (``--max-calls`` /
   ``--max-tokens``; :class:`~.stopping.BudgetReached` once spent), waits for the shared
   concurrency bound and rate limiter, and calls the model, retrying transient provider
   errors (:class:`~meclear_integrations.core.failures.retry.CallRetrier`: backoff,
   ``retry-after``);
3. stores the reply with the tokens the provider reported (estimated at 4 characters per
   token when it reports none);
4. charges the method being measured (the :class:`CallMeter` made current with
   :func:`metering`) and the run's :class:`CallTotals`.

A judge's structured call asks in the format the judges negotiate per endpoint
(``meclear_integrations.judges.model``: json_schema -> json_object -> text): a format the
server rejects (HTTP 400/422/500 about ``response_format``) raises
:class:`~meclear_integrations.judges.model.UnsupportedFormatError` at once, never retried
as transient, and the judge asks again in the next format (``--judge-output auto``).

A reply the provider cut at its token limit (``finish_reason`` ``length``) or an empty reply
is a failed call too: never cached, counted in ``truncated_replies`` / ``empty_replies``,
raised as a non-transient error for that case. A call that still fails raises a
non-transient error for that case (the runner records it and moves on), except a refusal
no retry heals (HTTP 401, 403, 404: bad key, no access, unknown model), which raises
:class:`~.stopping.ProviderRejected` and stops the run, and an endpoint that cannot be
reached before any call of the run has reached it (a dead or mistyped ``--base-url``),
which raises :class:`~.stopping.EndpointUnreachable` and stops the run too (later
connection errors stay one case's failure: a blip mid-run).
Concurrent calls with the same cache key are made once.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from meclear_integrations.core.budget import RunBudget
from meclear_integrations.core.concurrency.workers import check_call_allowed, in_worker
from meclear_integrations.core.config import RetryPolicy
from meclear_integrations.core.errors import (
    ConfigurationError,
    ConfigurationTypeError,
    RedactedError,
)
from meclear_integrations.core.failures.faults import exception_chain, http_status, sanitize
from meclear_integrations.judges.model import (
    OutputFormat,
    UnsupportedFormatError,
    format_rejection,
)

from .cache import CachedReply, ResponseCache, cache_key, unbind_nonce
from .model_spec import ModelSpec
from .reader_server import estimate_tokens
from .stopping import BudgetReached, EndpointUnreachable, ProviderRejected, RunStopped

__all__ = [
    "CallLimits",
    "CallMeter",
    "CallTotals",
    "ModelClient",
    "current_meter",
    "metering",
]

_FATAL_STATUS = frozenset({401, 403, 404})
_FORMATS: dict[str, OutputFormat] = {"json": "json_schema", "json_object": "json_object"}
"""The output format of each structured call kind (``judges.model``)."""
_CONNECT_ERRORS = frozenset({"APIConnectionError", "ConnectError", "ConnectTimeout"})
"""Exception type names of a connection that never opened (openai, httpx)."""


@dataclass
class CallMeter:
    """The model calls one method made on one case (what a user running it would pay)."""

    agent_calls: int = 0
    """Agent model calls."""
    judge_calls: int = 0
    """Judge model calls."""
    rater_calls: int = 0
    """Rater model calls."""
    prompt_tokens: int = 0
    """Prompt tokens of those calls."""
    completion_tokens: int = 0
    """Completion tokens of those calls."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def model_calls(self) -> int:
        """Agent, judge and rater calls charged to this meter."""
        return self.agent_calls + self.judge_calls + self.rater_calls

    def charge(self, role: str, reply: CachedReply) -> None:
        """Charge one call of ``role`` and its tokens to this meter.

        Args:
            role: ``agent``, ``judge`` or ``rater``.
            reply: The reply, with its token counts.
        """
        with self._lock:
            setattr(self, f"{role}_calls", getattr(self, f"{role}_calls") + 1)
            self.prompt_tokens += reply.prompt_tokens
            self.completion_tokens += reply.completion_tokens


_METER: contextvars.ContextVar[CallMeter | None] = contextvars.ContextVar(
    "meclear_bench_meter", default=None
)


@contextlib.contextmanager
def metering(meter: CallMeter | None) -> Iterator[CallMeter | None]:
    """Charge the model calls made inside the block to ``meter``; None charges nobody.

    Calls made in workers the block starts are charged too.

    Args:
        meter: The meter charged, or None.

    Yields:
        ``meter``.
    """
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


def current_meter() -> CallMeter | None:
    """The meter the current context charges calls to, if any.

    Returns:
        The meter set by :func:`metering`, or None.
    """
    return _METER.get()


@dataclass
class CallTotals:
    """What the whole run asked for and paid (thread-safe through its lock)."""

    provider_calls: int = 0
    """Calls that reached a provider and succeeded."""
    cache_hits: int = 0
    """Calls answered from the response cache."""
    prompt_tokens: int = 0
    """Prompt tokens of the provider calls."""
    completion_tokens: int = 0
    """Completion tokens of the provider calls."""
    estimated_tokens: bool = False
    """Some token counts are estimates (a provider reported no usage)."""
    failed_calls: int = 0
    """Calls that failed after their retries."""
    retries: int = 0
    """Retried attempts (transient provider errors)."""
    truncated_replies: int = 0
    """Replies the provider cut at its token limit (failed calls)."""
    empty_replies: int = 0
    """Empty replies (failed calls)."""
    by_role: dict[str, int] = field(default_factory=dict)
    """Provider calls per role."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, Any]:
        """The totals as a JSON-ready dictionary (read under the lock).

        Returns:
            Provider calls, cache hits, tokens, failures, retries and calls per role.
        """
        with self.lock:
            return {
                "provider_calls": self.provider_calls,
                "cache_hits": self.cache_hits,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "tokens_estimated": self.estimated_tokens,
                "failed_calls": self.failed_calls,
                "retries": self.retries,
                "truncated_replies": self.truncated_replies,
                "empty_replies": self.empty_replies,
                "provider_calls_by_role": dict(self.by_role),
            }


@dataclass(frozen=True)
class CallLimits:
    """``--max-calls`` / ``--max-tokens``: provider calls and tokens this run may spend."""

    max_calls: int | None = None
    """The most provider calls (None: no limit)."""
    max_tokens: int | None = None
    """The most prompt plus completion tokens (None: no limit)."""


class _Reservations:
    """Places under the limits: calls in flight count against ``max_calls``."""

    def __init__(self, limits: CallLimits, totals: CallTotals) -> None:
        self.limits = limits
        self.totals = totals
        self.in_flight = 0

    def reserve(self) -> None:
        limits, totals = self.limits, self.totals
        with totals.lock:
            if limits.max_calls is not None and (
                totals.provider_calls + self.in_flight >= limits.max_calls
            ):
                raise BudgetReached(f"--max-calls {limits.max_calls} reached", reason="max_calls")
            if limits.max_tokens is not None and totals.tokens >= limits.max_tokens:
                raise BudgetReached(
                    f"--max-tokens {limits.max_tokens} reached ({totals.tokens} tokens spent)",
                    reason="max_tokens",
                )
            self.in_flight += 1

    def release(self) -> None:
        with self.totals.lock:
            self.in_flight -= 1


class CallGate:
    """What every client of one run shares.

    Cache, totals, limits, concurrency bound and rate limiter (a langchain-core ``BaseRateLimiter``,
    e.g. ``InMemoryRateLimiter``).

    Args:
        cache: The response cache.
        limits: ``--max-calls`` / ``--max-tokens`` (None: no limit).
        concurrency: The most provider calls in flight.
        rate_limiter: A langchain-core rate limiter (None: none).
        retry: The retry policy of transient provider errors.
    """

    def __init__(
        self,
        cache: ResponseCache,
        *,
        limits: CallLimits | None = None,
        concurrency: int = 4,
        rate_limiter: Any = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.cache = cache
        self.totals = CallTotals()
        self.limits = limits or CallLimits()
        self.reservations = _Reservations(self.limits, self.totals)
        self.slots = threading.BoundedSemaphore(max(1, concurrency))
        self.rate_limiter = rate_limiter
        self.retry = retry or RetryPolicy(max_attempts=4, retry_unreadable=False)


# One inheritable LangChain configure hook, registered once, carries the usage handler of
# the call in progress (a hook per call would pile up in langchain-core's global list).
_USAGE: contextvars.ContextVar[Any] = contextvars.ContextVar("meclear_bench_usage", default=None)
_HOOK_LOCK = threading.Lock()
_HOOKED: list[bool] = []


def _usage_handler() -> Any:
    from langchain_core.callbacks import UsageMetadataCallbackHandler
    from langchain_core.tracers.context import register_configure_hook

    with _HOOK_LOCK:
        if not _HOOKED:
            register_configure_hook(_USAGE, inheritable=True)
            _HOOKED.append(True)

    class CallHandler(UsageMetadataCallbackHandler):
        """Token usage and the ``finish_reason`` of each generation of one call."""

        def __init__(self) -> None:
            super().__init__()
            self.finish_reasons: list[str] = []

        def on_llm_end(self, response: Any, **kwargs: Any) -> None:
            super().on_llm_end(response, **kwargs)
            for generations in response.generations:
                for generation in generations:
                    info = generation.generation_info or {}
                    message = getattr(generation, "message", None)
                    metadata = getattr(message, "response_metadata", None) or {}
                    reason = info.get("finish_reason") or metadata.get("finish_reason")
                    if reason:
                        self.finish_reasons.append(str(reason))

    return CallHandler()


def _reported(handler: Any) -> tuple[int, int] | None:
    usage = getattr(handler, "usage_metadata", None) or {}
    if not usage:
        return None
    prompt = sum(int(u.get("input_tokens", 0) or 0) for u in usage.values())
    completion = sum(int(u.get("output_tokens", 0) or 0) for u in usage.values())
    return prompt, completion


class ModelClient:
    """One role's model behind the run's :class:`CallGate` (module docstring).

    Args:
        role: ``agent``, ``judge`` or ``rater``.
        spec: The model's specification.
        gate: The run's shared gate.
        structured_output: As in
            :func:`~meclear_integrations.langchain.model.as_text_model` (None: when
            supported).
        llm: Overrides ``spec.build()`` (tests).

    Raises:
        ConfigurationError: ``role`` is unknown.
    """

    def __init__(
        self,
        role: str,
        spec: ModelSpec,
        gate: CallGate,
        *,
        structured_output: bool | None = None,
        llm: Any = None,
    ) -> None:
        if role not in ("agent", "judge", "rater"):
            raise ConfigurationError(f"unknown role {role!r}")
        from meclear_integrations.langchain.model import LangChainStructuredTextModel, as_text_model

        self.role = role
        self.spec = spec
        self.gate = gate
        self.identity = spec.identity()
        self.inner = as_text_model(
            llm if llm is not None else spec.build(), structured_output=structured_output
        )
        self.structured = isinstance(self.inner, LangChainStructuredTextModel)
        self.endpoint: str | None = getattr(self.inner, "endpoint", None)
        """The endpoint key the judges negotiate output formats under."""
        self.json_mode = self.structured and callable(
            getattr(self.inner, "complete_json_object", None)
        )
        from meclear_integrations.core.failures.retry import CallRetrier

        self._retrier = CallRetrier(gate.retry, RunBudget())
        self._pending: dict[str, Future[CachedReply]] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ calls
    def complete(self, prompt: str, *, draw: int = 0) -> str:
        """The model's text reply to ``prompt`` (draw ``draw`` of a sampled model).

        Args:
            prompt: The prompt.
            draw: The draw of a sampled model (cached separately).

        Returns:
            The reply's text.
        """
        value = self._call("text", prompt, None, draw)
        return value if isinstance(value, str) else json.dumps(value)

    def complete_json(self, prompt: str, schema: Mapping[str, Any], *, draw: int = 0) -> Any:
        """A structured reply (an object, or raw text when the model ignored the schema).

        Args:
            prompt: The prompt.
            schema: The JSON schema of the reply.
            draw: The draw of a sampled model.

        Returns:
            The reply.

        Raises:
            ConfigurationTypeError: The client was built without structured output.
        """
        if not self.structured:
            raise ConfigurationTypeError(f"the {self.role} model is used without structured output")
        return self._call("json", prompt, schema, draw)

    def complete_json_object(self, prompt: str, schema: Mapping[str, Any], *, draw: int = 0) -> Any:
        """A JSON-mode reply (``response_format`` ``json_object`` carrying ``schema``).

        Args:
            prompt: The prompt.
            schema: The JSON schema of the reply (a grammar on llama.cpp servers).
            draw: The draw of a sampled model.

        Returns:
            The reply text.

        Raises:
            ConfigurationTypeError: The model offers no JSON mode.
        """
        if not self.json_mode:
            raise ConfigurationTypeError(f"the {self.role} model offers no JSON mode")
        return self._call("json_object", prompt, schema, draw)

    def text_model(self) -> Any:
        """This client as the judges' neutral text model.

        The model makes JSON-schema (and JSON-mode) calls when structured output is on.
        """
        if self.json_mode:
            return _JsonModeFacade(self)
        return _StructuredFacade(self) if self.structured else _Facade(self)

    def _call(self, kind: str, prompt: str, schema: Mapping[str, Any] | None, draw: int) -> Any:
        keyed, nonce = unbind_nonce(prompt) if kind == "text" else (prompt, None)
        key = cache_key(self.identity, kind=kind, prompt=keyed, draw=draw, schema=schema)
        reply = self.gate.cache.get(key)
        if reply is None:
            reply = self._single_flight(key, kind, prompt, schema, nonce)
        else:
            with self.gate.totals.lock:
                self.gate.totals.cache_hits += 1
        meter = current_meter()
        if meter is not None:
            meter.charge(self.role, reply)
        return reply.for_nonce(nonce)

    def _single_flight(
        self,
        key: str,
        kind: str,
        prompt: str,
        schema: Mapping[str, Any] | None,
        nonce: str | None,
    ) -> CachedReply:
        with self._lock:
            pending = self._pending.get(key)
            owner = pending is None
            if owner:
                pending = self._pending[key] = Future()
        assert pending is not None
        if not owner:
            return pending.result()
        try:
            reply = self._fetch(key, kind, prompt, schema, nonce)
        except BaseException as exc:
            pending.set_exception(exc)
            pending.exception()  # retrieved: waiters re-raise it themselves
            raise
        finally:
            with self._lock:
                del self._pending[key]
        pending.set_result(reply)
        return reply

    def _fetch(
        self,
        key: str,
        kind: str,
        prompt: str,
        schema: Mapping[str, Any] | None,
        nonce: str | None,
    ) -> CachedReply:
        gate = self.gate
        check_call_allowed()
        gate.reservations.reserve()
        try:
            with gate.slots:
                attempts = 0

                def attempt() -> tuple[Any, tuple[int, int] | None, list[str]]:
                    nonlocal attempts
                    attempts += 1
                    if gate.rate_limiter is not None:
                        gate.rate_limiter.acquire(blocking=True)
                    try:
                        return self._invoke(kind, prompt, schema)
                    except Exception as exc:
                        fmt = _FORMATS.get(kind)
                        rejection = format_rejection(exc, fmt, self.endpoint) if fmt else None
                        if rejection is None:
                            raise
                        raise rejection from exc  # permanent: never retried

                try:
                    value, usage, reasons = self._retrier.call(attempt)
                except Exception as exc:
                    raise self._failure(exc, attempts) from None
                finally:
                    with gate.totals.lock:
                        gate.totals.retries += max(0, attempts - 1)
            self._check_reply(value, reasons)
            reply = self._priced(value, usage, prompt, nonce)
            gate.cache.put(key, model=self.spec.label, kind=kind, reply=reply)
            with gate.totals.lock:
                totals = gate.totals
                totals.provider_calls += 1
                totals.by_role[self.role] = totals.by_role.get(self.role, 0) + 1
                totals.prompt_tokens += reply.prompt_tokens
                totals.completion_tokens += reply.completion_tokens
                totals.estimated_tokens |= reply.estimated
            return reply
        finally:
            gate.reservations.release()

    def _invoke(
        self, kind: str, prompt: str, schema: Mapping[str, Any] | None
    ) -> tuple[Any, tuple[int, int] | None, list[str]]:
        handler = _usage_handler()
        token = _USAGE.set(handler)
        try:
            if kind == "json":
                value = self.inner.complete_json(prompt, schema)  # type: ignore[attr-defined]
                value = dict(value) if isinstance(value, Mapping) else str(value)
            elif kind == "json_object":
                value = str(self.inner.complete_json_object(prompt, schema))  # type: ignore[attr-defined]
            else:
                value = self.inner.complete(prompt)
        finally:
            _USAGE.reset(token)
        return value, _reported(handler), list(handler.finish_reasons)

    def _check_reply(self, value: Any, reasons: list[str]) -> None:
        """Raise a counted, non-transient failure for a cut or an empty reply (never cached)."""
        if "length" in reasons:
            field_name, what = "truncated_replies", "was cut at the provider's token limit"
            hint = "finish_reason length; raise max_tokens in the model's kwargs"
        elif isinstance(value, str) and not value.strip():
            field_name, what, hint = "empty_replies", "was empty", "the model said nothing"
        else:
            return
        with self.gate.totals.lock:
            totals = self.gate.totals
            setattr(totals, field_name, getattr(totals, field_name) + 1)
            totals.failed_calls += 1
        raise RedactedError(
            f"the {self.role} model's reply ({self.spec.label}) {what} ({hint})",
            original_type="UnusableReply",
            transient=False,
        )

    @staticmethod
    def _priced(
        value: Any, usage: tuple[int, int] | None, prompt: str, nonce: str | None
    ) -> CachedReply:
        if usage is not None:
            return CachedReply(value, usage[0], usage[1], estimated=False, nonce=nonce)
        text = value if isinstance(value, str) else json.dumps(value)
        prompt_tokens, completion_tokens = estimate_tokens(prompt), estimate_tokens(text)
        return CachedReply(value, prompt_tokens, completion_tokens, estimated=True, nonce=nonce)

    def _failure(self, exc: Exception, attempts: int) -> Exception:
        """What a call that failed after its retries raises (module docstring)."""
        with self.gate.totals.lock:
            self.gate.totals.failed_calls += 1
        if isinstance(exc, RunStopped | UnsupportedFormatError):
            return exc  # a rejected format: the judge asks in the next one
        status = http_status(exc)
        safe = sanitize(exc)
        if status is None and self._unreachable(exc):
            where = self.spec.base_url or "the provider's default endpoint"
            return EndpointUnreachable(
                f"the {self.role} model ({self.spec.label}) at {where} cannot be reached: "
                f"{safe} (check --base-url and that the server is up)",
                reason="unreachable",
            )
        if status in _FATAL_STATUS:
            return ProviderRejected(
                f"the {self.role} model ({self.spec.label}) refused the call with HTTP "
                f"{status}: {safe} (check the model name, the endpoint and the key)",
                reason=f"http_{status}",
            )
        return RedactedError(
            f"{self.role} model call failed after {attempts} attempt(s): {safe}",
            original_type=safe.original_type,
            transient=False,  # retried here already: the engine must not retry it again
            status_code=status,
        )

    def _unreachable(self, exc: BaseException) -> bool:
        """A connection error before any call of the run reached a provider."""
        with self.gate.totals.lock:
            if self.gate.totals.provider_calls:
                return False
        for link in exception_chain(exc, depth=16):
            if isinstance(link, ConnectionError) or type(link).__name__ in _CONNECT_ERRORS:
                return True
        return False


class _Facade:
    """A :class:`ModelClient` as :class:`~meclear_integrations.judges.model.TextModel`."""

    def __init__(self, client: ModelClient) -> None:
        self.client = client

    def complete(self, prompt: str) -> str:
        return self.client.complete(prompt)

    async def acomplete(self, prompt: str) -> str:
        return await in_worker(self.complete, prompt)


class _StructuredFacade(_Facade):
    def __init__(self, client: ModelClient) -> None:
        super().__init__(client)
        self.endpoint = client.endpoint

    def complete_json(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        return self.client.complete_json(prompt, schema)

    async def acomplete_json(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        return await in_worker(self.complete_json, prompt, schema)


class _JsonModeFacade(_StructuredFacade):
    def complete_json_object(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        return self.client.complete_json_object(prompt, schema)

    async def acomplete_json_object(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        return await in_worker(self.complete_json_object, prompt, schema)
