"""``proxyspex``: a sparse second-order interaction surrogate (after ProxySPEX, Kang et al.).

shapiq 1.4.1's ProxySPEX crashes at every budget <= 32 (see the project's NOTES), so this
is our own implementation: B distinct random ablations (keep probability 0.5; B matched
per case to MeClear's coalitions by default), a Lasso (standardised features) over the K
main effects x_i and the K(K-1)/2 pairwise products x_i x_j. On the 0/1 scale its
coefficients are a sparse Moebius expansion of order two, read out as Shapley values
phi_i = a_i + 1/2 sum_j a_ij. Ranking: phi_i < 0, most negative first. Flagged:
phi_i < -tau, or with the ``relative`` rule also phi_i <= min(phi) / 2 (tuned on the dev
split, ``BenchSettings.proxyspex``). Deletes: its verified nested selection (``verified``)
or the flagged set as is (``paper`` / ``direct``). The run's trial policy applies.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from .ablations import fit_standardised_lasso, sample_ablations
from .answer_rule import answer_backed_order
from .base import BenchMethod, MethodContext, MethodOutput, case_seed
from .deletions import flag_order, harm_ranking, settle_clearance
from .loo import exited

__all__ = ["ProxySpexAnswersMethod", "ProxySpexMethod", "pairwise_features", "shapley_from_moebius"]


def pairwise_features(masks: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """[x_1..x_K, x_i x_j for i < j] and the pair of every product column.

    Args:
        masks: The ablation masks, shape (B, K).

    Returns:
        (features, pairs).
    """
    k = masks.shape[1]
    pairs = list(combinations(range(k), 2))
    products = [masks[:, i] * masks[:, j] for i, j in pairs]
    stacked = np.column_stack([masks, *products]) if products else masks
    return stacked, pairs


def shapley_from_moebius(
    k: int, main: np.ndarray, pair_terms: dict[tuple[int, int], float]
) -> np.ndarray:
    """phi_i = a_i + sum over pairs holding i of a_ij / 2 (Shapley of an order-2 game).

    Args:
        k: The number of memories.
        main: The first-order coefficients a_i.
        pair_terms: (i, j) -> a_ij.

    Returns:
        phi, one value per memory.
    """
    phi = np.array(main, dtype=float).copy()
    for (i, j), a in pair_terms.items():
        phi[i] += a / 2
        phi[j] += a / 2
    return phi


class ProxySpexMethod(BenchMethod):
    """Sparse pairwise-interaction surrogate fitted on random ablations."""

    name = "proxyspex"
    answer_rule = False
    """Flag by the answer-backed rule and verify deletions (``proxyspex-answers``)."""

    def run(self, ctx: MethodContext) -> MethodOutput:
        """Run the method on one case.

        Args:
            ctx: The case, the run's settings and the evaluator the method charges its calls to.

        Returns:
            The method's scores, harm ranking, flagged and cleared memories.
        """
        s = ctx.settings
        tuned = s.proxyspex
        oracle = ctx.oracle()
        if oracle.exits():
            return exited(ctx)
        ids = [m.id for m in ctx.case.memories]
        k = len(ids)
        rng = np.random.default_rng(case_seed(s.seed, ctx.case.case_id, "ablations"))
        masks, values = sample_ablations(oracle, ctx.ablation_budget(), s.keep_probability, rng)
        features, pairs = pairwise_features(masks)
        coef = fit_standardised_lasso(features, values, tuned.alpha)
        pair_terms = {p: float(coef[k + n]) for n, p in enumerate(pairs) if coef[k + n] != 0}
        phi = shapley_from_moebius(k, coef[:k], pair_terms)
        scores = {mid: float(phi[i]) for i, mid in enumerate(ids)}
        order = flag_order([float(x) for x in phi], tuned.tolerance, tuned.flag_rule)
        clearance = s.clearance
        if self.answer_rule:  # the answer-backed flags and verified deletions (answer_rule)
            threshold = s.engine.verification.success_threshold
            backed = answer_backed_order(
                oracle, [float(x) for x in phi], tuned.tolerance, threshold
            )
            order = order if backed is None else backed
            clearance = "verified"
        cleared, tried, status = settle_clearance(
            clearance, verifies_in_paper=False, oracle=oracle, order=order
        )
        return MethodOutput(
            scores=scores,
            ranking=harm_ranking(ids, {m: -v for m, v in scores.items()}),
            flagged=[ids[i] for i in order],
            cleared=[ids[i] for i in cleared],
            details={
                "interactions": {f"{ids[i]}|{ids[j]}": a for (i, j), a in pair_terms.items()},
                "ablations": int(masks.shape[0]),
                "candidates": tried,
            },
            status=status,
        )


class ProxySpexAnswersMethod(ProxySpexMethod):
    """ProxySpex with the answer-backed flag rule and verified deletions (:mod:`.answer_rule`)."""

    name = "proxyspex-answers"
    answer_rule = True
