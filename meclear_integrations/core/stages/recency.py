"""The recency candidate, verified before attribution (``core.recency``).

When the engine is given a ``RecencyPrior`` (``MeClearEngine(recency=...)``), the older of
similar dated memories form one candidate C_r, verified like any other (Eq. 18-19). When it
is admissible it is the clearance (reported by ``prior_clearance`` with
``clearance_search="recency"``); otherwise attribution runs on the same coalition cache.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 18-19.
"""

from __future__ import annotations

import logging

from ..grouping import memory_graph
from ..recency import dated_count, ignored_dates, link_strength, recency_positions
from .prior import PriorTry
from .steps import Run, Steps, evaluated

__all__ = ["recency_search"]

logger = logging.getLogger(__name__)


def recency_search(run: Run) -> Steps[list[PriorTry] | None]:
    """Form C_r and verify it: its verdict when admissible, else None.

    The positions tried are recorded on ``run.recency_tried`` (empty: no candidate, e.g.
    fewer than two dated memories or none older than a similar one).

    Args:
        run: the run (screening's exit test already evaluated).

    Returns:
        ``[verdict]`` when M minus C_r is admissible against M, else None.
    """
    prior = run.recency
    game = run.game
    if prior is None:
        return None
    latest = prior.latest()
    run.recency_ignored = ignored_dates(game.context, prior.key, latest=latest)
    if run.recency_ignored:
        logger.warning(
            "MeClear recency: %d of %d memories have a %r that is unreadable, out of range "
            "or in the future; ignored for recency (ClearanceReport.recency_ignored)",
            len(run.recency_ignored),
            len(game.context),
            prior.key,
        )
    if dated_count(game.context, prior.key, latest=latest) < 2:
        return None
    similarity = memory_graph(game.context, run.embed)  # sparse, shared with grouping
    positions = recency_positions(
        game.context,
        similarity,
        key=prior.key,
        min_similarity=prior.min_similarity,
        latest=latest,
    )
    run.recency_tried = positions
    if not positions:
        return None
    recovered, admissible = yield from _verify(run, positions)
    if not admissible:
        return None
    if prior.shrink and len(positions) > 1:
        cleared = list(positions)
        order = sorted(
            positions,
            key=lambda i: (link_strength(game.context, similarity, i, prior.key, latest=latest), i),
        )
        for u in order:
            rest = [i for i in cleared if i != u]
            if not rest:
                continue
            passed, shown = yield from _verify(run, rest)
            if shown:  # u was not needed: it stays in the context
                cleared, recovered = rest, passed
        return [PriorTry(cleared, recovered, True)]
    return [PriorTry(positions, recovered, admissible)]


def _verify(run: Run, cleared: list[int]) -> Steps[tuple[bool, bool]]:
    """Verify M minus ``cleared`` against M (Eq. 18-19): (recovered, admissible).

    At the recency prior's own recovery rate when it sets one.
    """
    rate = run.recency.recovery_rate if run.recency is not None else None
    rule = run.rule.at_rate(rate)
    selection = yield from evaluated(rule.removal(run.game, cleared))
    return bool(selection.recovered[1]), selection.selected == 1
