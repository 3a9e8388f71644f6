"""The prior candidate: memories verified harmful before, verified first (``core.prior``).

When the prior candidate verifies (Eq. 18-19) it is the clearance and attribution is
skipped; each unproven member is put back as a test recorded after it, then those that
recovered alone are put back together (one more test; an acquittal needs it). When the carriers
are wanted (``find_carriers`` / ``clearance_scope="complete"``) the carriers search runs
after the verified prior too (``core.stages.carriers``): the copies of the harm the ledger
did not know yet.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 18-19.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..events import StageEvent
from ..report import ClearanceCandidate, ClearanceReport
from ..verification.rule import candidate_coalition
from .carriers import with_carriers
from .outcomes import clearance_end, closing, cost
from .steps import Emit, Run, Steps
from .verify_removal import verify_removal

__all__ = ["PriorTry", "prior_clearance", "prior_search"]


@dataclass(frozen=True, slots=True)
class PriorTry:
    """One prior candidate or put-back test verified.

    Args:
        cleared: the positions it clears.
        recovered: whether M minus them recovers.
        admissible: whether it is admissible against M (Eq. 19).
    """

    cleared: list[int]
    recovered: bool
    admissible: bool


def prior_search(run: Run, prior: list[int], unproven: list[int]) -> Steps[list[PriorTry] | None]:
    """Verify the prior candidate, then put each unproven member back in turn.

    When more than one member recovers put back alone (or one does and the candidate holds
    carriers, ``run.prior_carriers``), they are put back together, with the carriers, as
    one more test: redundant copies of one harm each recover alone beside the evidence, and
    an acquittal of each by its own test would serve them all again (``ledger.proof``).
    Carriers are never put back alone.

    Args:
        run: the run.
        prior: positions of the prior candidate's members in this context.
        unproven: those of them whose own contribution is not established.

    Returns:
        The candidate's verdict, then one per put-back test; None when the candidate is
        not admissible (or the tests' trials of M overturned its gain).
    """
    tried = [PriorTry(list(prior), *(yield from verify_removal(run, prior)))]
    if not tried[0].admissible:
        return None
    if len(prior) < 2:
        return tried  # a single member's own contribution is the candidate's verdict
    copies = run.prior_carriers & set(prior)
    tested = [u for u in unproven if u not in copies and set(prior) - copies - {u}]
    for u in tested:  # (with only carriers left removed, u put back could never acquit)
        rest = [i for i in prior if i != u]
        tried.append(PriorTry(rest, *(yield from verify_removal(run, rest, True))))
    back = {u for u, t in zip(tested, tried[1:], strict=True) if t.recovered}
    together = [i for i in prior if i not in back and i not in copies]
    if back and (len(back) > 1 or copies) and together:
        # copies each recover alone beside the evidence: put them back together, with the
        # carriers (``ledger.proof`` acquits them only if this recovers too)
        tried.append(PriorTry(together, *(yield from verify_removal(run, together, True))))
    if len(tried) > 1 and not (yield from verify_removal(run, prior))[1]:
        return None  # the tests' trials of M overturned the candidate's gain
    return tried


def prior_clearance(
    run: Run, tried: list[PriorTry], search: Literal["prior", "recency"] = "prior"
) -> Steps[ClearanceReport]:
    """The verified prior candidate as the clearance; no attribution.

    Closes the screening stage and runs the clearance stage's events; the put-back tests
    follow the candidate in ``report.candidates``.

    Args:
        run: the run.
        tried: :func:`prior_search`'s verdicts (the candidate first).
        search: ``prior`` (the caller's candidate) or ``recency`` (``core.recency``).

    Returns:
        The report, ``clearance_search=search``.
    """
    cfg, game = run.config, run.game
    ids = run.ids
    baseline = game.value(game.full)
    # only a scoped candidate, tried before the exit test, can follow a passing baseline
    baseline_recovered = run.prior_first and run.rule.recovers(game, game.full)
    union = tried[0].cleared
    yield Emit(
        StageEvent(
            stage="screening",
            phase="end",
            payload={
                "baseline_value": baseline,
                "baseline_recovered": baseline_recovered,
                "early_exit": False,
                f"{search}_ids": [ids[i] for i in union],
                "loo": {},
            },
        )
    )
    yield Emit(
        StageEvent(
            stage="clearance",
            phase="start",
            payload={
                "candidates": [[]] + [[ids[i] for i in t.cleared] for t in tried],
                "search": search,
            },
        )
    )
    cleared = set(union)
    candidates = [
        ClearanceCandidate(
            size=0,
            memory_ids=[],
            value=baseline,
            gain=0.0,
            recovered=baseline_recovered,
            admissible=True,
            trials=game.trials_of(game.full),
            family="nested",
        )
    ]
    for t in tried:
        coalition = candidate_coalition(game.k, t.cleared)
        value = game.value(coalition)
        candidates.append(
            ClearanceCandidate(
                size=len(t.cleared),
                memory_ids=[ids[i] for i in t.cleared],
                value=value,
                gain=value - baseline,
                recovered=t.recovered,
                admissible=t.admissible,
                trials=game.trials_of(coalition),
                family=search,
            )
        )
    report = ClearanceReport(
        baseline_value=baseline,
        final_value=candidates[1].value,
        recovered=tried[0].recovered,
        kept=[m for i, m in enumerate(game.context) if i not in cleared],
        cleared=[m for i, m in enumerate(game.context) if i in cleared],
        attributions=[],
        candidates=candidates,
        cost=cost(run),
        config=cfg,
        clearance_search=search,
    )
    if cleared and report.recovered and not baseline_recovered and cfg.carriers_wanted:
        # the carriers of the harm the ledger's prior cleared (redundant copies it missed)
        report = yield from closing("clearance", with_carriers(run, report, cleared), run)
    yield clearance_end(1, report)
    return report
