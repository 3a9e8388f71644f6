"""Stage events of one admission decision (start/end/error pairs)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AdmissionEvent", "AdmissionListener", "AdmissionStage"]

AdmissionStage = Literal["probes", "responses", "evaluation", "admission", "reason"]


class AdmissionEvent(BaseModel):
    """One stage boundary of a ConMem decision."""

    model_config = ConfigDict(frozen=True)

    stage: AdmissionStage
    """probes (generation + validation + repair), responses, evaluation (judge + auditor),
    admission (CMTE + tie-break), reason."""
    phase: Literal["start", "end", "error"]
    """``start`` opens a stage; every start is closed by ``end`` or ``error``."""
    candidate_id: str | None = None
    """The caller's id of the candidate, if given."""
    payload: dict[str, Any] = Field(default_factory=dict)
    """Stage results (labels and numbers; no memory or context text)."""


AdmissionListener = Callable[[AdmissionEvent], Awaitable[None] | None]
