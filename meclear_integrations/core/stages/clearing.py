"""Stage 4 of Algorithm 1, verified clearance (steps 6-17): candidates, Eq. 16-20.

The candidates are nested (C_j of Eq. 17, over H^ ordered by Eq. 16) or every subset of
H^ (the ideal objective, Eq. 4-5), then the fallback candidates of the interval rule;
the run's verification rule (``Run.rule``) verifies each (Eq. 18-19) and selects one (Eq.
20). When nothing non-empty verifies, the candidate sources (``core.stages.sources``:
answer group, escalation, residual) add theirs, verified the same way. A verified
clearance is then checked for framing (:func:`unframed`) and extended by its carriers.

Framing: instruction-like memories (``core.instructions``) can *frame* an innocent one: "if a
memory mentions his journal, answer Paris" acts only when the journal note is present, so
removing the note is the smallest verified fix and the injections stay. A memory is removed
only when it carries the failing answer itself, not only together with the instructions the
clearance kept. The test, when a verified clearance C removed non-instruction memories and
kept instruction-like ones S:

- verify M minus S (and minus the instructions C removed; Eq. 18-19 against M, the rule of
  every candidate). If it recovers, the memories of C are harmless without the
  instructions: they were framed. The clearance becomes S (the instructions are what act),
  reported with the candidate (``family="fallback"``), and C's memories are kept.
- Otherwise some harm holds without the instructions and C stands as verified.

Cost: one candidate's verification, only on a context with kept instructions.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 4-5, 16-20.
"""

from __future__ import annotations

from itertools import combinations
from typing import Literal

from ..config import ClearanceConfig
from ..estimators import configured_estimator
from ..estimators.auto import clearance_bound
from ..events import StageEvent
from ..game import CoalitionGame
from ..instructions import is_instruction_like
from ..report import (
    CandidateFamily,
    ClearanceCandidate,
    ClearanceReport,
    MemoryAttribution,
    PairInteraction,
)
from ..verification.rule import (
    candidate_coalition,
    fallback_candidates,
    minimal_candidates,
    nested_candidates,
)
from ..verification.sequential import Selection
from .attribution import Attribution
from .carriers import with_carriers
from .outcomes import clearance_end, closing, cost, unverified_report
from .sources import fallback_sources
from .steps import Emit, Run, Steps, evaluated
from .verify_removal import verifier, verify_removal

__all__ = ["clearance", "search_family", "unframed", "verifier"]


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
    run.stage = "clearance"
    search = search_family(run.config, run.game, attributed.priority)
    candidates, families = _candidates(attributed, search)  # steps 6-8: Eq. 16-17
    yield _started(run, candidates, search, attributed.fallback)
    candidates, families, selection = yield from closing(  # steps 9-16: Eq. 18-20
        "clearance", _verified(run, attributed, candidates, families), run
    )
    tried = _tried(run, candidates, families, selection)
    if selection.undecided:
        return (yield from _abstained(run, tried))
    chosen = candidates[selection.selected]
    report = _selected(run, attributed, pairs, chosen, selection, tried, search)
    report = yield from _checked(run, report)  # framing, then the carriers of the harm
    yield clearance_end(selection.selected, report)  # step 17: return M minus C_j^
    return report


def _candidates(
    attributed: Attribution, search: Literal["nested", "minimal"]
) -> tuple[list[list[int]], list[CandidateFamily]]:
    """The candidates C_j over H^ (Eq. 17, or every subset), then the fallback family."""
    priority, fallback = attributed.priority, attributed.fallback
    candidates = (
        minimal_candidates(priority, attributed.psi)
        if search == "minimal"
        else nested_candidates(priority)
    ) + fallback_candidates(priority, fallback)
    return candidates, _families(candidates, search, len(candidates) - len(fallback))


def _started(run: Run, candidates: list[list[int]], search: str, fallback: list[int]) -> Emit:
    """The clearance stage's start event."""
    ids = run.ids
    return Emit(
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


def _tried(
    run: Run, candidates: list[list[int]], families: list[CandidateFamily], selection: Selection
) -> list[ClearanceCandidate]:
    """Every candidate verified, as the report lists it."""
    game, ids = run.game, run.ids
    return [
        ClearanceCandidate(
            size=len(c),
            memory_ids=[ids[i] for i in c],
            value=game.value(candidate_coalition(game.k, c)),
            gain=selection.gains[j],
            recovered=selection.recovered[j],
            admissible=selection.admissible[j],
            trials=game.trials_of(candidate_coalition(game.k, c)),
            family=families[j],
        )
        for j, c in enumerate(candidates)
    ]


def _abstained(run: Run, tried: list[ClearanceCandidate]) -> Steps[ClearanceReport]:
    """Trials of a better-looking candidate kept disagreeing: the context unchanged."""
    reason = "inconsistent_trials"
    yield Emit(
        StageEvent(
            stage="clearance",
            phase="end",
            payload={
                "status": "unverified",
                "status_reason": reason,
                "detail": "trials of a better-looking candidate kept disagreeing after "
                f"{run.config.verification.max_trials} trials; the context is returned "
                "unchanged",
                "cleared_ids": [],
                "kept_ids": run.ids,
                "baseline_value": run.game.value(run.game.full),
                "cost": cost(run).model_dump(),
            },
        )
    )
    return unverified_report(run, reason, tried)


def _selected(
    run: Run,
    attributed: Attribution,
    pairs: list[PairInteraction],
    chosen: list[int],
    selection: Selection,
    tried: list[ClearanceCandidate],
    search: Literal["nested", "minimal"],
) -> ClearanceReport:
    """The report of the selected clearance C_j^ (Eq. 20)."""
    cfg, game = run.config, run.game
    cleared = set(chosen)
    final = candidate_coalition(game.k, chosen)
    return ClearanceReport(
        baseline_value=game.value(game.full),  # the verification may have added trials
        final_value=game.value(final),
        recovered=run.rule.final_recovered(game, selection, chosen),
        kept=[m for i, m in enumerate(game.context) if i not in cleared],
        cleared=[m for i, m in enumerate(game.context) if i in cleared],
        attributions=[_flagged(a, a.position in cleared) for a in run.attributions or []],
        interactions=pairs,
        candidates=tried,
        cost=cost(run),
        config=cfg,
        estimator=attributed.estimator.name,
        clearance_search=search,
    )


def _flagged(attribution: MemoryAttribution, cleared: bool) -> MemoryAttribution:
    """The attribution with its clearance flags; the same (frozen) object when they hold.

    A memory the verified clearance removed is cleared, and a fallback memory it removed
    joins H^ (harmful). Only the memories whose flags change are copied.
    """
    harmful = attribution.harmful or cleared
    if attribution.cleared == cleared and attribution.harmful == harmful:
        return attribution
    return attribution.model_copy(update={"cleared": cleared, "harmful": harmful})


def _checked(run: Run, report: ClearanceReport) -> Steps[ClearanceReport]:
    """A verified non-empty clearance, checked for framing and extended by its carriers."""
    game = run.game
    gone = set(report.cleared_ids)
    cleared = {i for i, m in enumerate(game.context) if m.id in gone}
    if not (cleared and report.recovered):
        return report
    report = yield from closing("clearance", unframed(run, report, cleared), run)
    gone = set(report.cleared_ids)
    cleared = {i for i, m in enumerate(game.context) if m.id in gone}
    if cleared and (run.config.carriers_wanted or run.grouped):
        report = yield from closing("clearance", with_carriers(run, report, cleared), run)
    return report


def unframed(run: Run, report: ClearanceReport, cleared: set[int]) -> Steps[ClearanceReport]:
    """``report``, or the clearance of the kept instructions when they framed ``cleared``.

    Args:
        run: the run.
        report: the verified clearance's report.
        cleared: the positions it removed.

    Returns:
        The report (unchanged when no instruction was kept or the harm holds without them).
    """
    game = run.game
    suspects = [
        i
        for i in range(game.k)
        if i not in cleared and is_instruction_like(game.context[i].content)
    ]
    innocent = [i for i in cleared if not is_instruction_like(game.context[i].content)]
    if not suspects or not innocent:
        return report
    gone = set(suspects) | (cleared - set(innocent))
    recovered, admissible = yield from verify_removal(run, sorted(gone))
    if not (recovered and admissible):
        return report
    coalition = candidate_coalition(game.k, sorted(gone))
    value = game.value(coalition)
    candidate = ClearanceCandidate(
        size=len(gone),
        memory_ids=[game.context[i].id for i in sorted(gone)],
        value=value,
        gain=value - game.value(game.full),
        recovered=True,
        admissible=True,
        trials=game.trials_of(coalition),
        family="fallback",
    )
    return report.model_copy(
        update={
            "kept": [m for i, m in enumerate(game.context) if i not in gone],
            "cleared": [m for i, m in enumerate(game.context) if i in gone],
            "final_value": value,
            "recovered": True,
            "candidates": [*report.candidates, candidate],
            "attributions": [
                a.model_copy(update={"cleared": a.position in gone}) for a in report.attributions
            ],
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
    candidates, families = yield from _verify_staged(run, candidates, families)
    selection = yield from _settled(run, attributed, candidates)
    sources = fallback_sources(run)
    for source in sources:
        if not source.wanted(run, attributed, selection):
            continue
        extra = yield from source.candidates(run, attributed, candidates)
        if extra:
            candidates = candidates + extra
            families = families + [source.family] * len(extra)
            selection = yield from _settled(run, attributed, candidates)
    for source in sources:
        selection = source.moved(run, attributed, candidates, selection)
    return candidates, families, selection


def _settled(run: Run, attributed: Attribution, candidates: list[list[int]]) -> Steps[Selection]:
    """Eq. 18-20 over the verified candidates; close verdicts first get more trials.

    With ``Verification.close_trials`` on a complete table (``estimator.enumerates``)
    the rule's ``settle_close`` (``core.verification.rule``) spends trials where the
    verdicts are close before Eq. 20 decides.
    """
    game, rule = run.game, run.rule
    close = run.config.verification.close_trials
    if close is None or not attributed.estimator.enumerates:
        return rule.select(game, candidates)
    return (yield from evaluated(rule.settle_close(game, candidates, close)))


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
