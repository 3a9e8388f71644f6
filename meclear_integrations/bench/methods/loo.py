"""``loo``: leave-one-out screening as a clearance method (the paper's LOO baseline).

Scores: d_i = v^(M) - v^(M minus m_i) (Eq. 7). Ranking: memories with d_i < 0, most negative
first. Flagged: d_i < -kappa, most negative first. Deletes: the flagged set as is
(``--clearance paper`` / ``direct``) or its verified nested selection (``verified``).
Cost: K + 1 coalitions (plus the candidates under ``verified``).
"""

from __future__ import annotations

from .base import BenchMethod, MethodContext, MethodOutput
from .clearance import harm_ranking, settle_clearance

__all__ = ["LooMethod"]


class LooMethod(BenchMethod):
    """Delete what single-record removal shows to be harmful."""

    name = "loo"

    def run(self, ctx: MethodContext) -> MethodOutput:
        oracle = ctx.oracle()
        ids = [m.id for m in ctx.case.memories]
        base = oracle.value(oracle.full)
        d = {mid: base - oracle.value(oracle.without([i])) for i, mid in enumerate(ids)}
        kappa = ctx.settings.loo_tolerance
        order = sorted(
            (i for i, mid in enumerate(ids) if d[mid] < -kappa), key=lambda i: (d[ids[i]], i)
        )
        cleared, tried = settle_clearance(
            ctx.settings.clearance, verifies_in_paper=False, oracle=oracle, order=order
        )
        return MethodOutput(
            scores=d,
            ranking=harm_ranking(ids, {m: -v for m, v in d.items()}),
            flagged=[ids[i] for i in order],
            cleared=[ids[i] for i in cleared],
            details={"baseline_value": base, "candidates": tried},
        )
