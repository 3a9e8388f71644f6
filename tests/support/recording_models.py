"""Stand-in models that log every prompt and the path (sync or async) it came by.

For the tests that hold an integration's sync and async paths to the same steps: each path
must call its own model method, with the same prompts.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from meclear_integrations.langchain import SimulatedChatModel


class RecordingChat(SimulatedChatModel):
    """The simulated chat model (SIMULATED), logging every prompt and its path."""

    prompts: list[str] = Field(default_factory=list)
    paths: set[str] = Field(default_factory=set)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        self.paths.add("sync")
        self.prompts.append(str([m.content for m in messages]))
        return super()._generate(messages, stop, run_manager, **kwargs)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        self.paths.add("async")
        self.prompts.append(str([m.content for m in messages]))
        return await super()._agenerate(messages, stop, run_manager, **kwargs)


def canonical_prompts(prompts: list[str]) -> list[str]:
    """``prompts`` in a canonical order, the judge's per-call verdict nonce blanked.

    The engine's coalitions run concurrently, so the order of the calls is not part of
    what the two paths share; the judge prompt's nonce is drawn per call.
    """
    return sorted(re.sub(r"VERDICT [0-9a-f]{12}", "VERDICT <nonce>", p) for p in prompts)


def plain(value: Any) -> Any:
    """A document's id and whether clearance dropped it (no timings)."""
    return (value.id, value.metadata.get("meclear", {}).get("cleared"))
