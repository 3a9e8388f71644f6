"""``loo``: leave-one-out screening as a clearance method (the paper's LOO baseline).

Scores: d_i = v^(M) - v^(M minus m_i) (Eq. 7). Ranking: memories with d_i < 0, most negative
first. Flagged: d_i < -kappa, most negative first. Deletes: its verified nested selection
(``--clearance verified``) or the flagged set as is (``paper`` / ``direct``). The run's trial
policy applies (early exit on the full context, one trial per leave-one-out coalition under
adaptive trials). Cost: K + 1 coalitions (plus the candidates under ``verified``).

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 7.
"""

from __future__ import annotations

from .base import BenchMethod, MethodContext, MethodOutput
from .deletions import harm_ranking, settle_clearance

__all__ = ["LooMethod", "LooOnceMethod", "exited"]


def exited(ctx: MethodContext) -> MethodOutput:
    """The output of a baseline whose full context passed the early-exit test.

    Args:
        ctx: The method's context.

    Returns:
        An output that flags and deletes nothing.
    """
    return MethodOutput(
        scores={m.id: 0.0 for m in ctx.case.memories},
        ranking=[],
        flagged=[],
        cleared=[],
        details={"early_exit": True},
    )


class LooMethod(BenchMethod):
    """Delete what single-record removal shows to be harmful."""

    name = "loo"

    def run(self, ctx: MethodContext) -> MethodOutput:
        """Run the method on one case.

        Args:
            ctx: The case, the run's settings and the evaluator the method charges its calls to.

        Returns:
            The method's scores, harm ranking, flagged and cleared memories.
        """
        oracle = ctx.oracle()
        if oracle.exits():
            return exited(ctx)
        ids = [m.id for m in ctx.case.memories]
        trials = ctx.settings.trial_policy(ctx.method).trials
        base = sum(s := oracle.scores(oracle.full, trials)) / len(s)
        d = {mid: base - oracle.value(oracle.without([i])) for i, mid in enumerate(ids)}
        kappa = ctx.settings.loo_tolerance
        order = sorted(
            (i for i, mid in enumerate(ids) if d[mid] < -kappa), key=lambda i: (d[ids[i]], i)
        )
        cleared, tried, status = settle_clearance(
            ctx.settings.clearance, verifies_in_paper=False, oracle=oracle, order=order
        )
        return MethodOutput(
            scores=d,
            ranking=harm_ranking(ids, {m: -v for m, v in d.items()}),
            flagged=[ids[i] for i in order],
            cleared=[ids[i] for i in cleared],
            details={"baseline_value": base, "candidates": tried},
            status=status,
        )


class LooOnceMethod(BenchMethod):
    """Leave-one-out at K + 1 evaluations: one trial each, the flagged set deleted as is.

    The cheapest attribution a user would write: one trial of the full context (when it
    passes, nothing is done: 1 evaluation), then one trial of each leave-one-out context;
    a memory is flagged when removing it turns a failing answer into a passing one
    (d_i < 0, Eq. 7 on single trials) and the flagged set is deleted without verification,
    whatever ``--clearance`` says (verifying would cost more than K + 1 evaluations).
    """

    name = "loo-once"

    def run(self, ctx: MethodContext) -> MethodOutput:
        """Run the method on one case.

        Args:
            ctx: The case, the run's settings and the evaluator the method charges its calls to.

        Returns:
            The method's scores, harm ranking, flagged and cleared memories.
        """
        context = tuple(ctx.case.context())
        ids = [m.id for m in context]
        threshold = ctx.settings.success_threshold
        base = ctx.evaluate(context, 0)
        if base >= threshold:
            return exited(ctx)
        d = {
            mid: base - ctx.evaluate(context[:i] + context[i + 1 :], 0) for i, mid in enumerate(ids)
        }
        flagged = sorted((mid for mid in ids if d[mid] < 0), key=lambda m: (d[m], ids.index(m)))
        return MethodOutput(
            scores=d,
            ranking=harm_ranking(ids, {m: -v for m, v in d.items()}),
            flagged=flagged,
            cleared=list(flagged),
            details={"baseline_value": base, "evaluations": 1 + len(ids)},
        )
