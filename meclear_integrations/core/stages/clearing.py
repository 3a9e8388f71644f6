"""Stage 4 of Algorithm 1, verified clearance (steps 6-17): candidates, Eq. 16-20.

The candidates are nested (C_j of Eq. 17, over H^ ordered by Eq. 16) or every subset of
H^ (the ideal objective, Eq. 4-5), then the fallback candidates of the interval rule;
each is verified (Eq. 18-19) and Eq. 20 selects one. When nothing non-empty verifies,
escalation searches subsets of the negatively valued memories (``core.escalation``).

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 4-5, 16-20.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations
from typing import Literal

from ..answer_flags import answer_backed
from ..clearance import (
    candidate_coalition,
    fallback_candidates,
    minimal_candidates,
    nested_candidates,
)
from ..config import ClearanceConfig
from ..escalation import escalation_candidates, escalation_pool, wide_pool
from ..estimators import ShapleyEstimator, configured_estimator
from ..estimators.exact import exact_bound
from ..events import StageEvent
from ..game import CoalitionGame
from ..report import CandidateFamily, ClearanceCandidate, ClearanceReport, PairInteraction
from ..residual import promote, residual_z
from ..verification import Selection
from .attribution import Attribution
from .carriers import carriers, withhold_carriers
from .failures import closing
from .framing import unframed
from .outcomes import clearance_end, cost, unverified_report
from .steps import Emit, Evaluate, Run, Steps, evaluated
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
    """Verify the candidates, escalate when nothing non-empty verifies, select (Eq. 20)."""
    cfg, game, rule = run.config, run.game, run.rule
    candidates, families = yield from _verify_staged(run, candidates, families)
    selection = rule.select(game, candidates)
    if selection.selected == 0 and not selection.undecided and attributed.group:
        extra = yield from _group_candidates(run, attributed, candidates)
        if extra:
            candidates = candidates + extra
            families = families + ["answer_group"] * len(extra)
            selection = rule.select(game, candidates)
    if (
        selection.selected == 0
        and not selection.undecided
        and cfg.escalation
        and not rule.recovers(game, game.full)
    ):
        extra = yield from _escalate(run, attributed, candidates)
        if extra:
            candidates = candidates + extra
            families = families + ["escalation"] * len(extra)
            selection = rule.select(game, candidates)
    if selection.selected == 0 and not rule.recovers(game, game.full):
        extra = yield from _residual_candidates(run, attributed, candidates)
        if extra:
            candidates = candidates + extra
            families = families + ["residual"] * len(extra)
            selection = rule.select(game, candidates)
    return candidates, families, _promoted(run, attributed, candidates, selection)


def _residual_candidates(
    run: Run, attributed: Attribution, tried: list[list[int]]
) -> Steps[list[list[int]]]:
    """When nothing non-empty is admissible: the best-looking candidate plus a residual harm.

    The tried non-empty candidate C whose context M minus C has the highest value (it
    gains, but does not verifiably recover) is extended by the memory most harmful in
    the residual game on M minus C (``core.residual``: z above the estimator's
    ``residual_z``, table evidence only), and the extension is verified against M as
    escalation verifies; at most two extensions in a row. Off unless the estimator sets
    ``residual_z``; never the whole context.
    """
    z = getattr(attributed.estimator, "residual_z", None)
    game = run.game
    if z is None or not run.rule.interval_evidence:
        return []
    k = game.k
    seen = {tuple(sorted(c)) for c in tried}
    base = game.value(game.full)
    looked = [
        c
        for c in tried
        if c
        and game.trials_of(candidate_coalition(k, c)) > 0
        and game.value(candidate_coalition(k, c)) > base
    ]
    if not looked:
        return []
    current = max(looked, key=lambda c: (game.value(candidate_coalition(k, c)), -len(c)))
    out: list[list[int]] = []
    for _ in range(2):
        kept = candidate_coalition(k, current)
        scored = [(residual_z(game, kept, 1 << i), i) for i in range(k) if kept & (1 << i)]
        best = max(scored, default=(0.0, -1))
        if best[0] <= z or len(current) + 1 >= k:
            break
        current = [*current, best[1]]
        if tuple(sorted(current)) in seen:
            break
        yield from evaluated(run.rule.verify(game, [game.full, candidate_coalition(k, current)]))
        out.append(current)
        if run.rule.select(game, [[], current]).selected == 1:
            break
    return out


def _promoted(
    run: Run, attributed: Attribution, candidates: list[list[int]], selection: Selection
) -> Selection:
    """Eq. 20's choice moved by the residual evidence (``core.residual``), when asked for.

    Only under the sequential rule and when the estimator sets ``residual_z``; a move
    whose extra deletions the answers all back (``core.answer_flags.answer_backed``)
    needs the estimator's ``answer_residual_z`` instead, when it sets one and
    ``answer_flags``. A move never goes to a candidate that is not admissible, so the
    gains, recovery and admissibility flags are unchanged.
    """
    z = getattr(attributed.estimator, "residual_z", None)
    if z is None or not run.rule.interval_evidence or selection.undecided:
        return selection
    coalitions = [candidate_coalition(run.game.k, c) for c in candidates]
    backed_z = getattr(attributed.estimator, "answer_residual_z", None)
    backed = 0
    if backed_z is not None and getattr(attributed.estimator, "answer_flags", False):
        threshold = run.config.verification.success_threshold
        backed = sum(1 << i for i in answer_backed(run.game, threshold))
    moved = promote(
        run.game,
        coalitions,
        selection.selected,
        selection.admissible,
        float(z),
        backed,
        None if backed_z is None else float(backed_z),
    )
    return replace(selection, selected=moved)


def _group_candidates(
    run: Run, attributed: Attribution, tried: list[list[int]]
) -> Steps[list[list[int]]]:
    """Nested candidates over the answer group (most negative contribution first), verified.

    The memories that alone give the failing answer (``core.grouping.answer_group``),
    ordered by psi as Eq. 16 orders H^, cut into prefixes as Eq. 17 does. The whole group
    is verified first (Eq. 18-19 against M); when it is admissible, a binary search over
    the prefix length finds the shortest admissible prefix it reaches (each probe
    verified against M alone, as escalation verifies, so no two admissible candidates
    tie). Returned: the probes that were not admissible and the shortest admissible one,
    smallest first; never the whole context.
    """
    game, rule = run.game, run.rule
    psi = attributed.psi
    chain = sorted(attributed.group, key=lambda i: (psi[i], i))
    if len(chain) >= game.k:
        chain = chain[: game.k - 1]
    seen = {tuple(sorted(c)) for c in tried}
    if not chain or tuple(sorted(chain)) in seen:
        return []

    def admissible(j: int) -> Steps[bool]:
        yield from evaluated(rule.verify(game, [game.full, candidate_coalition(game.k, chain[:j])]))
        return rule.select(game, [[], chain[:j]]).selected == 1

    failed: list[int] = []
    lo, hi = 0, len(chain)
    if not (yield from admissible(hi)):
        return [chain]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if tuple(sorted(chain[:mid])) in seen:
            lo = mid  # tried already, and nothing tried was admissible
            continue
        if (yield from admissible(mid)):
            hi = mid
        else:
            failed.append(mid)
            lo = mid
    return [chain[:j] for j in sorted(failed)] + [chain[:hi]]


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
    if config.clearance == "nested" or len(priority) > exact_bound(configured_estimator(config)):
        return "nested"
    if config.clearance == "minimal":
        return "minimal"
    k = game.k
    for size in range(2, len(priority) + 1):  # sizes 0 and 1 are the baseline and LOO
        for cleared in combinations(priority, size):
            if game.trials_of(candidate_coalition(k, cleared)) == 0:
                return "nested"
    return "minimal"


def _escalate(run: Run, attributed: Attribution, tried: list[list[int]]) -> Steps[list[list[int]]]:
    """Escalation (``core.escalation``): the search's new candidates verified one by one.

    Under the run's rule, smallest first, up to the first admissible one (so a larger
    candidate never ties with it); empty when the search finds nothing.
    """
    cfg, game = run.config, run.game
    estimator: ShapleyEstimator = attributed.estimator
    psi = attributed.psi
    suspects = getattr(estimator, "suspects", ())
    pools = [escalation_pool(psi, cfg.budget.escalation_pool, suspects)]
    if attributed.sampled:  # a sampled estimate may put a harmful memory at or above zero
        pools.append(wide_pool(psi, 2 * cfg.budget.escalation_pool, suspects, cfg.harm_tolerance))
    search = escalation_candidates(game, pools, cfg.verification.success_threshold)
    try:
        batch = next(search)
        while True:
            yield Evaluate(batch)
            batch = search.send(None)
    except StopIteration as done:
        found: list[list[int]] = done.value or []
    seen = {tuple(sorted(c)) for c in tried}
    # never an empty context: an answer from no memories says nothing about them
    found = [c for c in found if tuple(sorted(c)) not in seen and len(c) < game.k]
    verified: list[list[int]] = []
    for candidate in found:  # smallest first; the first that verifies ends the search
        coalition = candidate_coalition(game.k, candidate)
        yield from evaluated(run.rule.verify(game, [game.full, coalition]))
        verified.append(candidate)
        if run.rule.select(game, [[], candidate]).selected == 1:
            break
    return verified
