"""``contextcite``: a ContextCite-style linear surrogate (Cohen-Wang et al., 2024).

B distinct random ablations (each memory kept with probability 0.5; B matched per case to
MeClear's coalitions by default), the [0, 1] task value as target, Lasso on standardised
features. Scores: the surrogate weights w_i on the 0/1 scale (change of task value when
m_i is present). A negative weight marks harm; ranking: w_i < 0, most negative first.
Flagged: w_i < -tau, or with the ``relative`` rule also w_i <= min(w) / 2 (tau, alpha and
the rule are tuned on the dev split, ``BenchSettings.contextcite``). Deletes: its verified
nested selection (``verified``) or the flagged set as is (``paper`` / ``direct``). The run's
trial policy applies (early exit, one trial per ablation under adaptive trials). Cost: the
distinct ablated coalitions (and the verified candidates).
"""

from __future__ import annotations

import numpy as np

from .ablations import fit_standardised_lasso, sample_ablations
from .answer_rule import answer_backed_order
from .base import BenchMethod, MethodContext, MethodOutput, case_seed
from .deletions import flag_order, harm_ranking, settle_clearance
from .loo import exited

__all__ = ["ContextCiteAnswersMethod", "ContextCiteMethod"]


class ContextCiteMethod(BenchMethod):
    """Linear attribution surrogate fitted on random ablations."""

    name = "contextcite"
    answer_rule = False
    """Flag by the answer-backed rule and verify deletions (``contextcite-answers``)."""

    def run(self, ctx: MethodContext) -> MethodOutput:
        """Run the method on one case.

        Args:
            ctx: The case, the run's settings and the evaluator the method charges its calls to.

        Returns:
            The method's scores, harm ranking, flagged and cleared memories.
        """
        s = ctx.settings
        tuned = s.contextcite
        oracle = ctx.oracle()
        if oracle.exits():
            return exited(ctx)
        ids = [m.id for m in ctx.case.memories]
        rng = np.random.default_rng(case_seed(s.seed, ctx.case.case_id, "ablations"))
        masks, values = sample_ablations(oracle, ctx.ablation_budget(), s.keep_probability, rng)
        w = fit_standardised_lasso(masks, values, tuned.alpha)
        weights = {mid: float(w[i]) for i, mid in enumerate(ids)}
        order = flag_order([float(x) for x in w], tuned.tolerance, tuned.flag_rule)
        clearance = s.clearance
        if self.answer_rule:  # the answer-backed flags and verified deletions (answer_rule)
            threshold = s.engine.verification.success_threshold
            backed = answer_backed_order(oracle, [float(x) for x in w], tuned.tolerance, threshold)
            order = order if backed is None else backed
            clearance = "verified"
        cleared, tried, status = settle_clearance(
            clearance, verifies_in_paper=False, oracle=oracle, order=order
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
            status=status,
        )


class ContextCiteAnswersMethod(ContextCiteMethod):
    """ContextCite with the answer-backed flag rule and verified deletions (:mod:`.answer_rule`)."""

    name = "contextcite-answers"
    answer_rule = True
