"""Token usage of the agent's and the judge's LangChain model calls.

:data:`USAGE_CALLBACK` is added (inheritable) to the callback manager of each clearance
run, so it sees every model run under it; ``on_llm_end`` hands the usage the provider
reported (``AIMessage.usage_metadata``, else ``llm_output["token_usage"]``) to
:func:`meclear_integrations.runtime.usage.record_usage`, which books it to the query's meter under
the role (agent or judge) the task evaluator set.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from ..runtime.usage import record_usage, usage_from_mapping

__all__ = ["USAGE_CALLBACK", "UsageCallback", "llm_usage"]


def llm_usage(response: LLMResult) -> tuple[int, int] | None:
    """(input, output) tokens of a model run, when the provider reported them.

    Args:
        response: The model run's result.

    Returns:
        ``(input, output)`` tokens, or None.
    """
    for generations in response.generations:
        for generation in generations:
            message = getattr(generation, "message", None)
            found = usage_from_mapping(getattr(message, "usage_metadata", None))
            if found is not None:
                return found
    llm_output = response.llm_output or {}
    return usage_from_mapping(llm_output.get("token_usage") or llm_output.get("usage"))


class UsageCallback(BaseCallbackHandler):
    """Books reported token usage to the current query's meter (stateless)."""

    run_inline = True
    """Run in the model call's own context (where the meter and role are set)."""

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        """Book the tokens the provider reported for this call, if any.

        Args:
            response: The model's result.
            **kwargs: The callback's other arguments (unused).
        """
        usage = llm_usage(response)
        if usage is not None:
            record_usage(*usage)


USAGE_CALLBACK = UsageCallback()
"""The one handler every clearance run adds."""
