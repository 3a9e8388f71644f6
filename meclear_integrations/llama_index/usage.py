"""Token usage of the agent's and the judge's LlamaIndex LLM calls.

:func:`install_usage_handler` adds one event handler to LlamaIndex's root dispatcher (once
per process, on the first clearance): on every ``LLMChatEndEvent`` / ``LLMCompletionEndEvent``
it hands the usage the provider reported (``response.additional_kwargs`` /
``response.raw.usage``) to :func:`meclear_integrations.runtime.usage.record_usage`, which books it
to the current query's meter under the role the task evaluator set; outside a clearance it
does nothing. Events are handled in the LLM call's own context, so concurrent queries never
mix.
"""

from __future__ import annotations

import threading
from typing import Any

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.llm import LLMChatEndEvent, LLMCompletionEndEvent

from ..runtime.usage import record_usage, usage_from_mapping

__all__ = ["UsageEventHandler", "install_usage_handler", "response_usage"]

_installed = threading.Lock()
_handler: UsageEventHandler | None = None


def response_usage(response: Any) -> tuple[int, int] | None:
    """(input, output) tokens of an LLM response, when the provider reported them.

    Args:
        response: The LLM's response.

    Returns:
        ``(input, output)`` tokens, or None.
    """
    found = usage_from_mapping(getattr(response, "additional_kwargs", None))
    if found is not None:
        return found
    raw = getattr(response, "raw", None)
    usage = raw.get("usage") if isinstance(raw, dict) else getattr(raw, "usage", None)
    if usage is not None and not isinstance(usage, dict) and hasattr(usage, "model_dump"):
        usage = usage.model_dump()
    return usage_from_mapping(usage)


class UsageEventHandler(BaseEventHandler):
    """Books reported token usage to the current query's meter."""

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearUsageEventHandler"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        """Book the tokens of an LLM end event, when the provider reported them.

        Args:
            event: Any instrumentation event (others are ignored).
            **kwargs: The handler's other arguments (unused).
        """
        if not isinstance(event, LLMChatEndEvent | LLMCompletionEndEvent):
            return
        response = event.response
        usage = response_usage(response) if response is not None else None
        if usage is not None:
            raw = getattr(response, "raw", None)
            record_usage(*usage, source=raw if raw is not None else response)


def install_usage_handler() -> UsageEventHandler:
    """Add the handler to the root dispatcher once per process (idempotent).

    Returns:
        The installed handler.
    """
    global _handler
    with _installed:
        if _handler is None:
            _handler = UsageEventHandler()
            get_dispatcher().add_event_handler(_handler)
        return _handler
