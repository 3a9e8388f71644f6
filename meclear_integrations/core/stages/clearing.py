"""Stage 4 of Algorithm 1, verified clearance (steps 6-17): candidates, Eq. 16-20.

The candidates are nested (C_j of Eq. 17, over H^ ordered by Eq. 16) or every subset of
H^ (the ideal objective, Eq. 4-5), then the fallback candidates of the interval rule;
each is verified (Eq. 18-19) and Eq. 20 selects one. When nothing non-empty verifies,
escalation searches subsets of the negatively valued memories (``core.escalation``).

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 4-5, 16-20.
"""

from __future__ import annotations

from itertools import combinations
from typing import Literal

from ..clearance import (
    candidate_coalition,
    fallback_candidates,
    minimal_candidates,
    nested_candidates,
)
from ..config import ClearanceConfig
from ..estimators import configured_estimator
from ..estimators.auto import clearance_bound
from ..events import StageEvent
from ..game import CoalitionGame
from ..report import CandidateFamily, ClearanceCandidate, ClearanceReport, PairInteraction
from ..verification import Selection
from .attribution import Attribution
from .carriers import carriers, withhold_carriers
from .failures import closing
from .framing import unframed
from .outcomes import clearance_end, cost, unverified_report
from .sources import fallback_sources
from .steps import Emit, Run, Steps, evaluated
from .verify_removal import verifier

__all__ = ["clearance", "search_family", "verifier"]


def clearance(
    run: Run, attributed: Attribution, pairs: list[PairInteraction]
) -> Steps[ClearanceReport]:
    """Build, verify and select the clearance candidates (steps 6-17).

    Args:
        run: the run.
        attributed: the attribution stage's result (H^, psi, fallback memories).
        pairs: the interactions stage's result (reported, never used to decide).

    Returns:
        The run's report: the selected clearance, or ``status="unverified"`` when trials
        of a better-looking candidate kept disagreeing.
    """
    cfg, game = run.config, run.game
    k, ids = game.k, run.ids
    priority, fallback = attributed.priority, attributed.fallback
    run.stage = "clearance"
    search = search_family(run.config, game, priority)
    candidates = (
        minimal_candidates(priority, attributed.psi)
        if search == "minimal"
        else nested_candidates(priority)
    ) + fallback_candidates(priority, fallback)
    yield Emit(
        StageEvent(
            stage="clearance",
            phase="start",
            payload={
                "candidates": [[ids[i] for i in c] for c in candidates],
                "search": search,
                "fallback_ids": [ids[i] for i in fallback],
            },
        )
    )
    families = _families(candidates, search, len(candidates) - len(fallback))
    candidates, families, selection = yield from closing(
        "clearance", _verified(run, attributed, candidates, families), run
    )
    selected = selection.selected
    baseline = game.value(game.full)  # the verification may have added trials
    tried = [
        ClearanceCandidate(
            size=len(c),
            memory_ids=[ids[i] for i in c],
            value=game.value(candidate_coalition(k, c)),
            gain=selection.gains[j],
            recovered=selection.recovered[j],
            admissible=selection.admissible[j],
            trials=game.trials_of(candidate_coalition(k, c)),
            family=families[j],
        )
        for j, c in enumerate(candidates)
    ]
    if selection.undecided:
        reason = "inconsistent_trials"
        yield Emit(
            StageEvent(
                stage="clearance",
                phase="end",
                payload={
                    "status": "unverified",
                    "status_reason": reason,
                    "detail": "trials of a better-looking candidate kept disagreeing after "
                    f"{cfg.verification.max_trials} trials; the context is returned unchanged",
                    "cleared_ids": [],
                    "kept_ids": ids,
                    "baseline_value": baseline,
                    "cost": cost(run).model_dump(),
                },
            )
        )
        return unverified_report(run, reason, tried)
    cleared_positions = set(candidates[selected])
    final_coalition = candidate_coalition(k, candidates[selected])
    final_recovered = run.rule.final_recovered(game, selection, candidates[selected])
    report = ClearanceReport(
        baseline_value=baseline,
        final_value=game.value(final_coalition),
        recovered=final_recovered,
        kept=[m for i, m in enumerate(game.context) if i not in cleared_positions],
        cleared=[m for i, m in enumerate(game.context) if i in cleared_positions],
        attributions=[
            a.model_copy(
                update={
                    "cleared": a.position in cleared_positions,
                    # a fallback memory the verified clearance removed joins H^
                    "harmful": a.harmful or a.position in cleared_positions,
                }
            )
            for a in run.attributions or []
        ],
        interactions=pairs,
        candidates=tried,
        cost=cost(run),
        config=cfg,
        estimator=attributed.estimator.name,
        clearance_search=search,
    )
    if cleared_positions and final_recovered:  # instructions kept: was the memory framed?
        report = yield from closing("clearance", unframed(run, report, cleared_positions), run)
        gone = set(report.cleared_ids)
        cleared_positions = {i for i, m in enumerate(game.context) if m.id in gone}
    if cleared_positions and final_recovered and (cfg.carriers_wanted or run.grouped):
        report = yield from closing("clearance", with_carriers(run, report, cleared_positions), run)
    yield clearance_end(selected, report)
    return report


def with_carriers(run: Run, report: ClearanceReport, cleared: set[int]) -> Steps[ClearanceReport]:
    """``report`` with the carriers of its verified harm (``core.stages.carriers``).

    Under ``clearance_scope="complete"`` the carriers are withheld too when the context
    without them verifies; the report's kept context, final value and cost follow.

    Args:
        run: the run.
        report: the verified clearance's report.
        cleared: the positions it removed.

    Returns:
        The report with ``carriers``, ``carrier_status`` and ``cost.carrier_calls``.
    """
    cfg, game = run.config, run.game
    before = game.evaluator_calls
    scan = yield from carriers(run, sorted(cleared))
    found = scan.carriers
    update: dict[str, object] = {}
    if found and cfg.clearance_scope == "complete":
        removed = yield from withhold_carriers(run, sorted(cleared), found)
        if removed is not None:
            gone = set(removed)
            final = candidate_coalition(game.k, removed)
            found = [c.model_copy(update={"withheld": True}) for c in found]
            update = {
                "kept": [m for i, m in enumerate(game.context) if i not in gone],
                "withheld": [
                    m for i, m in enumerate(game.context) if i in gone and i not in cleared
                ],
                "final_value": game.value(final),
                "attributions": [
                    a.model_copy(update={"cleared": a.cleared or a.position in gone})
                    for a in report.attributions
                ],
            }
    return report.model_copy(
        update={
            **update,
            "carriers": found,
            "carrier_status": scan.status,
            "cost": cost(run).model_copy(update={"carrier_calls": game.evaluator_calls - before}),
        }
    )


def _verified(
    run: Run,
    attributed: Attribution,
    candidates: list[list[int]],
    families: list[CandidateFamily],
) -> Steps[tuple[list[list[int]], list[CandidateFamily], Selection]]:
    """Verify (Eq. 18-19) and select (Eq. 20), then walk the candidate sources.

    When nothing non-empty is admissible, each wanted source (``core.stages.sources``)
    adds its verified candidates and Eq. 20 selects again; a source may then move the
    final choice.
    """
    game, rule = run.game, run.rule
    candidates, families = yield from _verify_staged(run, candidates, families)
    selection = rule.select(game, candidates)
    sources = fallback_sources(run)
    for source in sources:
        if not source.wanted(run, attributed, selection):
            continue
        extra = yield from source.candidates(run, attributed, candidates)
        if extra:
            candidates = candidates + extra
            families = families + [source.family] * len(extra)
            selection = rule.select(game, candidates)
    for source in sources:
        selection = source.moved(run, attributed, candidates, selection)
    return candidates, families, selection


def _verify_staged(
    run: Run, candidates: list[list[int]], families: list[CandidateFamily]
) -> Steps[tuple[list[list[int]], list[CandidateFamily]]]:
    """Verify the candidates (Eq. 18-19); the fallback family only when the rule needs it."""
    core = sum(1 for f in families if f != "fallback")
    kept = yield from evaluated(run.rule.verify_staged(run.game, candidates, core))
    return candidates[:kept], families[:kept]


def _families(candidates: list[list[int]], search: str, standard: int) -> list[CandidateFamily]:
    """The family of each candidate: the searched family, then the fallback ones."""
    main: CandidateFamily = "minimal" if search == "minimal" else "nested"
    return [main if j < standard else "fallback" for j in range(len(candidates))]


def search_family(
    config: ClearanceConfig, game: CoalitionGame, priority: list[int]
) -> Literal["nested", "minimal"]:
    """The candidate family: ``config.clearance`` with ``"auto"`` resolved.

    Args:
        config: the run's settings.
        game: the coalition table.
        priority: H^ in the order of Eq. 16.

    Returns:
        ``"minimal"`` when asked for, or under ``"auto"`` when the table already holds
        every M minus C for C within H^ (no extra cost); else ``"nested"``.
    """
    bound = clearance_bound(configured_estimator(config))
    if config.clearance == "nested" or len(priority) > bound:
        return "nested"
    if config.clearance == "minimal":
        return "minimal"
    k = game.k
    for size in range(2, len(priority) + 1):  # sizes 0 and 1 are the baseline and LOO
        for cleared in combinations(priority, size):
            if game.trials_of(candidate_coalition(k, cleared)) == 0:
                return "nested"
    return "minimal"
