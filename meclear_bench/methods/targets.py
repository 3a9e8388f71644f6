"""``oracle``: deletes exactly the verified targets; the ceiling, not a method.

It reads the case's targets (no real method may), costs nothing, and shows what removing
precisely the injected faults achieves on trials no method saw: the recovery and accuracy
every method is measured against.
"""

from __future__ import annotations

from .base import BenchMethod, MethodContext, MethodOutput

__all__ = ["TargetOracle"]


class TargetOracle(BenchMethod):
    """Flags, ranks and deletes the case's targets."""

    name = "oracle"

    def run(self, ctx: MethodContext) -> MethodOutput:
        """Run the method on one case.

        Args:
            ctx: The case, the run's settings and the evaluator the method charges its calls to.

        Returns:
            The method's scores, harm ranking, flagged and cleared memories.
        """
        targets = list(ctx.case.targets)
        return MethodOutput(
            scores={m.id: (-1.0 if m.id in targets else 0.0) for m in ctx.case.memories},
            ranking=targets,
            flagged=targets,
            cleared=targets,
        )
