"""One retry layer: the engine's, not the provider client's on top of it.

Provider clients retry by themselves (``ChatOpenAI`` twice through the ``openai`` SDK,
LlamaIndex ``OpenAI`` three times with waits of 1 to 20 s); under the engine's own
retries (``ClearanceConfig.failure.retry.max_attempts``, 3 by default) one failing call then
became 9 requests, and an outage cost every query tens of seconds. The integrations
therefore call a copy of each model they wrap (``llm=``, a model passed as ``judge=``)
whose own retries are turned off: ``max_retries=0`` on the model, and on the SDK clients
it already built (``with_options(max_retries=0)``, which keeps their connection pool).
A failing call is then attempted exactly ``retry.max_attempts`` times, with the engine's
backoff, inside its call and wall budgets. The model you passed is never modified.

Models without a ``max_retries`` setting, and chains of your own (``agent=``, a
``response_synthesizer``), are used as they are: turn their retries off yourself, or
count them when you set ``retry.max_attempts``.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["SingleRetryLayer", "without_provider_retries"]

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
