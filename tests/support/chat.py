"""A scripted LangChain chat model: the stand-in model's world, failing on chosen calls."""

from __future__ import annotations

from typing import Any

from pydantic import model_validator

from meclear_integrations.langchain import SimulatedChatModel
from meclear_integrations.simulation.faults import ScriptedFaults


class ScriptedChat(SimulatedChatModel):
    """``inner``'s world; call n (1-based) in ``faults`` raises / returns that instead.

    A fault is an exception (raised) or a string (returned as the completion). ``every``
    makes a fault apply to every call (e.g. a dead provider). The stand-in model's
    :class:`~meclear_integrations.simulation.faults.ScriptedFaults` does the faulting."""

    @model_validator(mode="before")
    @classmethod
    def _scripted(cls, data: Any) -> Any:
        if isinstance(data, dict) and "inner" in data:
            data = dict(data)
            inner: SimulatedChatModel = data.pop("inner")
            faults = ScriptedFaults(data.pop("faults", None), every=data.pop("every", None))
            data.update(
                world=inner.world, memories=inner.memories, case_id=inner.case_id, faults=faults
            )
        return data

    @property
    def calls(self) -> int:
        return self.stand_in.calls
