"""``none``: no clearance; the full frozen context goes to the agent (the floor)."""

from __future__ import annotations

from .base import BenchMethod, MethodContext, MethodOutput

__all__ = ["NoClearance"]


class NoClearance(BenchMethod):
    """Ranks nothing, flags nothing, deletes nothing, costs nothing."""

    name = "none"

    def run(self, ctx: MethodContext) -> MethodOutput:
        return MethodOutput(
            scores={m.id: 0.0 for m in ctx.case.memories}, ranking=[], flagged=[], cleared=[]
        )
