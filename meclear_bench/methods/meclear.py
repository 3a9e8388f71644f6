"""``meclear``: the engine (Algorithm 1) with the run's configuration.

Scores: Shapley contributions psi_i (Eq. 3 / Eq. 11). Ranking: memories with psi_i < 0,
most negative first. Flagged: H^ = {psi_i < -tau} (Eq. 14, with the engine's harm rule) in
priority order (Eq. 16), as attribution left it, before verification (a fallback memory
the verified clearance removed is deleted, not flagged). Deletes: the engine's verified
selection C_j^ (Eq. 17-20), or H^ itself under ``--clearance direct``. An engine run that
abstained (``status="unverified"``) deletes nothing.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 3, 11, 14, 16-20.
"""

from __future__ import annotations

from meclear_integrations.core import ClearanceConfig, ClearanceReport, MeClearEngine, StageEvent
from meclear_integrations.core.recency import RecencyPrior

from .base import BenchMethod, MethodContext, MethodOutput, case_seed
from .deletions import harm_ranking

__all__ = ["MeClearMethod"]


class MeClearMethod(BenchMethod):
    """The MeClear engine as a benchmark method.

    Args:
        config: The engine configuration (its seed, when None, comes from the run).
        name: The method's name in results and reports.
        recency: The engine's recency candidate (``core.recency``; None: off).
    """

    verifies_in_paper = True

    def __init__(
        self,
        config: ClearanceConfig,
        *,
        name: str = "meclear",
        recency: RecencyPrior | None = None,
    ) -> None:
        self.config = config
        self.name = name
        self.recency = recency

    def case_config(self, ctx: MethodContext) -> ClearanceConfig:
        """The configuration with its seed mixed with the case id, failing closed.

        An evaluator failure must surface as a failed case, not as a quiet no-op clearance.

        Args:
            ctx: The method's context.

        Returns:
            The configuration.
        """
        seed = self.config.seed if self.config.seed is not None else ctx.settings.seed
        closed = self.config.failure.model_copy(update={"mode": "closed"})
        return self.config.model_copy(
            update={"seed": case_seed(seed, ctx.case.case_id), "failure": closed}
        )

    def report(self, ctx: MethodContext, events: list[StageEvent] | None = None) -> ClearanceReport:
        """Run the engine on the case's frozen context through the counted evaluator.

        Args:
            ctx: The method's context.
            events: Collects the engine's stage events (None: not collected).

        Returns:
            The engine's report.
        """
        engine = MeClearEngine(
            self.case_config(ctx),
            listener=events.append if events is not None else None,
            recency=self.recency,
        )
        return engine.clear(ctx.case.context(), ctx.evaluate)

    def run(self, ctx: MethodContext) -> MethodOutput:
        """Run the method on one case.

        Args:
            ctx: The case, the run's settings and the evaluator the method charges its calls to.

        Returns:
            The method's scores, harm ranking, flagged and cleared memories.
        """
        events: list[StageEvent] = []
        report = self.report(ctx, events)
        ids = [m.id for m in ctx.case.memories]
        psi = {a.memory_id: a.shapley for a in report.attributions}
        attributed = next(
            (e for e in events if e.stage == "attribution" and e.phase == "end"), None
        )
        harmful = attributed.payload["harmful_ids"] if attributed is not None else []
        flagged = sorted(harmful, key=lambda mid: (psi[mid], ids.index(mid)))
        cleared = flagged if ctx.settings.clearance == "direct" else report.cleared_ids
        if report.status != "complete":
            cleared = []
        return MethodOutput(
            scores=psi,
            ranking=harm_ranking(ids, {m: -v for m, v in psi.items()}),
            flagged=flagged,
            cleared=list(cleared),
            details={
                "baseline_value": report.baseline_value,
                "final_value": report.final_value,
                "loo": {a.memory_id: a.loo_effect for a in report.attributions},
                "intervals": {a.memory_id: list(a.shapley_interval) for a in report.attributions},
                "candidates": [c.model_dump() for c in report.candidates],
            },
            status=report.status,
            status_reason=report.status_reason,
        )
