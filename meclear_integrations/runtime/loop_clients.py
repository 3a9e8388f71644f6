"""The model copies a component calls: one retry layer, and one copy per event loop.

**One retry layer**: the engine's, not the provider client's on top of it. Provider
clients retry by themselves (``ChatOpenAI`` twice through the ``openai`` SDK, LlamaIndex
``OpenAI`` three times with waits of 1 to 20 s); under the engine's own retries
(``ClearanceConfig.failure.retry.max_attempts``, 3 by default) one failing call then
became 9 requests, and an outage cost every query tens of seconds. The integrations
therefore call a copy of each model they wrap (``llm=``, a model passed as ``judge=``)
whose own retries are turned off (:func:`without_provider_retries`): ``max_retries=0`` on
the model, and on the SDK clients it already built (``with_options(max_retries=0)``, which
keeps their connection pool). A failing call is then attempted exactly
``retry.max_attempts`` times, with the engine's backoff, inside its call and wall budgets.
The model you passed is never modified. Models without a ``max_retries`` setting, and
chains of your own (``agent=``, a ``response_synthesizer``), are used as they are: turn
their retries off yourself, or count them when you set ``retry.max_attempts``.

**One copy per event loop**: an async HTTP client is never reused on another loop.
``asyncio.run()`` once per request (Celery tasks, Flask views, scripts) closes its event
loop at the end of each request. An async HTTP client keeps its pooled keep-alive
connections on the loop that opened them, and reused from the next loop they fail
("Connection error", "Event loop is closed"). The OpenAI SDK's clients are such clients,
and LangChain's ``ChatOpenAI`` even shares one async HTTP client per ``base_url`` across
the whole process. A model with its provider retries on hides most of it (a failed
request is retried on a new connection); the copies the integrations call have them off
(one retry layer, above), so 8 of 16 queries failed open.

:class:`PerLoopModels` gives each running event loop its own copy of each model, with a
fresh async HTTP client: LangChain OpenAI-style models (``root_async_client`` /
``async_client``) get their SDK client copied onto a new ``openai.DefaultAsyncHttpxClient``
with the same timeout; LlamaIndex OpenAI-style models (``_aclient`` built lazily) get a
new one built on first use in that loop. Copies are held per loop (weakly: a closed,
collected loop drops them) and made once per loop and model. A client you passed
yourself (``http_async_client=`` / ``async_http_client=``) is kept: give each loop its
own, or keep one long-lived loop. Sync calls, and models without such clients
(fakes, ``agent=`` chains of your own), are used as they are.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any

__all__ = [
    "PerLoopModels",
    "SingleRetryLayer",
    "for_event_loop",
    "without_provider_retries",
]


_ROOT_CLIENTS = (("root_client", "client"), ("root_async_client", "async_client"))
"""LangChain OpenAI-style models: the SDK clients and the resource derived from each."""
_PRIVATE_CLIENTS = ("_client", "_aclient")
"""LlamaIndex OpenAI-style models: SDK clients cached in private attributes."""


def _no_retry_client(client: Any) -> Any:
    with_options = getattr(client, "with_options", None)
    return with_options(max_retries=0) if callable(with_options) else client


def without_provider_retries(model: Any) -> Any:
    """A copy of ``model`` whose provider client does not retry.

    ``model`` itself when it has no ``max_retries`` setting, already has 0, or cannot be
    copied. A LangChain ``RunnableBinding`` (``llm.bind(...)``, ``with_config``) is copied with
    its bound model treated the same way.

    Args:
        model: A LangChain chat model or LlamaIndex LLM (or anything else).

    Returns:
        The model to call.
    """
    copy = getattr(model, "model_copy", None)
    if not callable(copy):
        return model
    bound = getattr(model, "bound", None)
    if bound is not None and "max_retries" not in getattr(type(model), "model_fields", {}):
        inner = without_provider_retries(bound)
        return model if inner is bound else copy(update={"bound": inner})
    if not hasattr(model, "max_retries") or model.max_retries == 0:
        return model
    update: dict[str, Any] = {"max_retries": 0}
    for root_name, derived_name in _ROOT_CLIENTS:
        root = getattr(model, root_name, None)
        if root is None or not callable(getattr(root, "with_options", None)):
            continue
        derived = getattr(model, derived_name, None)
        new_root = root.with_options(max_retries=0)
        update[root_name] = new_root
        chat = getattr(root, "chat", None)
        if derived is not None and derived is getattr(chat, "completions", None):
            update[derived_name] = new_root.chat.completions
    clone = copy(update=update)
    for name in _PRIVATE_CLIENTS:
        client = getattr(clone, name, None)
        if client is not None:
            setattr(clone, name, _no_retry_client(client))
    return clone


class SingleRetryLayer:
    """Per component: the retry-free copy of each model it wraps, made once per model."""

    def __init__(self) -> None:
        self._copies: dict[int, tuple[Any, Any]] = {}
        self._lock = threading.Lock()

    def __call__(self, model: Any) -> Any:
        """:func:`without_provider_retries` of ``model``, cached (None stays None)."""
        if model is None:
            return None
        with self._lock:
            held = self._copies.get(id(model))
            if held is not None and held[0] is model:
                return held[1]
        clone = without_provider_retries(model)
        with self._lock:
            self._copies[id(model)] = (model, clone)  # holding model keeps its id unique
        return clone


_SDK_DEFAULT_CLIENTS = {"AsyncHttpxClientWrapper", "_AsyncHttpxClientWrapper"}
"""The async HTTP clients the OpenAI SDK and ``langchain_openai`` create themselves."""


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _fresh_http_client(http: Any) -> Any:
    """A new SDK-default async HTTP client like ``http``; None when ``http`` is the user's."""
    if type(http).__name__ not in _SDK_DEFAULT_CLIENTS:
        return None
    # the SDK's ``DefaultAsyncHttpxClient`` (its defaults, no ``__del__`` that would
    # schedule a close on whatever loop is running when it is collected); found in the
    # class's bases, so nothing of the SDK is imported here
    for cls in type(http).__mro__:
        if cls.__name__ in ("DefaultAsyncHttpxClient", "_DefaultAsyncHttpxClient"):
            return cls(timeout=http.timeout)
    return None


def for_event_loop(model: Any) -> Any:
    """A copy of ``model`` whose async clients are new (for the running loop only).

    Args:
        model: A LangChain chat model or LlamaIndex LLM (or anything else).

    Returns:
        The copy, or ``model`` itself when it holds no SDK-made async client.
    """
    copy = getattr(model, "model_copy", None)
    if not callable(copy):
        return model
    bound = getattr(model, "bound", None)
    if bound is not None and not hasattr(model, "root_async_client"):  # RunnableBinding
        inner = for_event_loop(bound)
        return model if inner is bound else copy(update={"bound": inner})
    root = getattr(model, "root_async_client", None)
    if root is not None and callable(getattr(root, "copy", None)):
        fresh = _fresh_http_client(getattr(root, "_client", None))
        if fresh is None:
            return model
        new_root = root.copy(http_client=fresh)
        update: dict[str, Any] = {"root_async_client": new_root}
        chat = getattr(root, "chat", None)
        if getattr(model, "async_client", None) is getattr(chat, "completions", None):
            update["async_client"] = new_root.chat.completions
        return copy(update=update)
    if hasattr(model, "_aclient") and getattr(model, "_async_http_client", None) is None:
        clone = copy()
        clone._aclient = None  # built on first use, in this loop
        return clone
    return model


class PerLoopModels(SingleRetryLayer):
    """:class:`SingleRetryLayer` whose copies are per running event loop (module docstring).

    Outside a running loop (sync calls) the retry-free copy is returned as before.
    """

    def __init__(self) -> None:
        super().__init__()
        self._loops: weakref.WeakKeyDictionary[Any, dict[int, tuple[Any, Any]]] = (
            weakref.WeakKeyDictionary()
        )
        self._loop_lock = threading.Lock()

    def __call__(self, model: Any) -> Any:
        """The retry-free copy of ``model`` for the running event loop (None stays None)."""
        base = super().__call__(model)
        loop = _running_loop()
        if base is None or loop is None:
            return base
        with self._loop_lock:
            try:
                held = self._loops.setdefault(loop, {})
            except TypeError:  # a loop that takes no weak reference: a copy per call
                return for_event_loop(base)
            entry = held.get(id(base))
            if entry is not None and entry[0] is base:
                return entry[1]
        clone = for_event_loop(base)
        with self._loop_lock:
            held[id(base)] = (base, clone)
        return clone
