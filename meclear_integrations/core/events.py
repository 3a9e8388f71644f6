"""Stage events the engine reports while it runs (start/end/error pairs, and progress).

Every ``start`` is closed by an ``end`` or an ``error``. Between them, each batch of
evaluator calls of the stage reports ``progress`` events (see :mod:`.progress`): they open
and close nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Stage", "StageEvent", "StageListener"]

Stage = Literal["screening", "attribution", "interactions", "clearance"]


class StageEvent(BaseModel):
    """One stage boundary of a clearance run."""

    model_config = ConfigDict(frozen=True)

    stage: Stage
    """Which stage of Algorithm 1."""
    phase: Literal["start", "end", "error", "progress"]
    """``start`` opens a stage; every start is closed by ``end`` or ``error``;
    ``progress`` reports a batch of the open stage (calls done / total, elapsed)."""
    payload: dict[str, Any] = Field(default_factory=dict)
    """Stage results (ids and numbers only, never memory texts)."""


StageListener = Callable[[StageEvent], Awaitable[None] | None]
