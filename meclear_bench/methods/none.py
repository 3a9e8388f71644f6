"""``none``: no clearance; the full frozen context goes to the agent (the floor)."""

from __future__ import annotations

from .base import BenchMethod, MethodContext, MethodOutput

__all__ = ["NoClearance"]


class NoClearance(BenchMethod):
    """Ranks nothing, flags nothing, deletes nothing, costs nothing."""

    name = "none"

    def run(self, ctx: MethodContext) -> MethodOutput:
        """Run the method on one case.

        Args:
            ctx: The case, the run's settings and the evaluator the method charges its calls to.

        Returns:
            The method's scores, harm ranking, flagged and cleared memories.
        """
        return MethodOutput(
            scores={m.id: 0.0 for m in ctx.case.memories}, ranking=[], flagged=[], cleared=[]
        )
