"""``contextcite``: a ContextCite-style linear surrogate (Cohen-Wang et al., 2024).

B=32 random ablations (each memory kept with probability 0.5), the [0, 1] task value as
target, Lasso (alpha=0.01) on standardised features. Scores: the surrogate weights w_i on
the 0/1 scale (change of task value when m_i is present). A negative weight marks harm;
ranking: w_i < 0, most negative first. Flagged: w_i < -tau (tau is the run's harm
tolerance, the same threshold MeClear applies to Shapley values; ``--harm-tolerance 0``
flags every negative weight). Deletes: the flagged set as is (``paper`` / ``direct``) or
its verified nested selection (``verified``). Cost: the distinct ablated coalitions.
"""

from __future__ import annotations

import numpy as np

from .ablations import fit_standardised_lasso, sample_ablations
from .base import BenchMethod, MethodContext, MethodOutput, case_seed
from .clearance import harm_ranking, settle_clearance

__all__ = ["ContextCiteMethod"]


class ContextCiteMethod(BenchMethod):
    """Linear attribution surrogate fitted on random ablations."""

    name = "contextcite"

    def run(self, ctx: MethodContext) -> MethodOutput:
        s = ctx.settings
        oracle = ctx.oracle()
        ids = [m.id for m in ctx.case.memories]
        rng = np.random.default_rng(case_seed(s.seed, ctx.case.case_id, "ablations"))
        masks, values = sample_ablations(oracle, s.surrogate_budget, s.keep_probability, rng)
        w = fit_standardised_lasso(masks, values, s.lasso_alpha)
        weights = {mid: float(w[i]) for i, mid in enumerate(ids)}
        order = sorted(
            (i for i in range(len(ids)) if w[i] < -s.harm_tolerance), key=lambda i: (w[i], i)
        )
        cleared, tried = settle_clearance(
            s.clearance, verifies_in_paper=False, oracle=oracle, order=order
        )
        return MethodOutput(
            scores=weights,
            ranking=harm_ranking(ids, {m: -v for m, v in weights.items()}),
            flagged=[ids[i] for i in order],
            cleared=[ids[i] for i in cleared],
            details={
                "negative_weights": [mid for mid in ids if weights[mid] < 0],
                "ablations": int(masks.shape[0]),
                "candidates": tried,
            },
        )
