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

from ..answer_flags import answer_backed
from ..clearance import (
    GAIN_TIE_TOLERANCE,
    candidate_coalition,
    fallback_candidates,
    minimal_candidates,
    nested_candidates,
    select_candidate,
)
from ..coalitions import Coalition
from ..config import ClearanceConfig
from ..escalation import escalation_candidates, escalation_pool, wide_pool
from ..estimators import ShapleyEstimator, configured_estimator
from ..estimators.exact import exact_bound
from ..events import StageEvent
from ..game import CoalitionGame
from ..report import CandidateFamily, ClearanceCandidate, ClearanceReport, PairInteraction
from ..residual import promote, residual_z
from ..verification import SequentialVerifier
from .attribution import Attribution
from .carriers import carriers, withhold_carriers
from .failures import closing
from .framing import unframed
from .outcomes import clearance_end, cost, unverified_report
from .steps import Emit, Evaluate, Run, Steps, want
from .verify_removal import verifier

__all__ = ["clearance", "search_family", "select", "verifier", "verify"]

_Selection = tuple[int, list[float], list[bool], list[bool], bool]


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
    candidates, families, (selected, gains, recovered, admissible, undecided) = yield from closing(
        "clearance", _verified(run, attributed, candidates, families), run
    )
    baseline = game.value(game.full)  # the verification may have added trials
    tried = [
        ClearanceCandidate(
            size=len(c),
            memory_ids=[ids[i] for i in c],
            value=game.value(candidate_coalition(k, c)),
            gain=gains[j],
            recovered=recovered[j],
            admissible=admissible[j],
            trials=game.trials_of(candidate_coalition(k, c)),
            family=families[j],
        )
        for j, c in enumerate(candidates)
    ]
    if undecided:
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
    final_recovered = (
        recovered[selected]
        if cfg.verification.rule == "sequential"
        else game.recovers(final_coalition, cfg.verification.success_threshold)
    )
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
        removed = yield from withhold_carriers(
            run, sorted(cleared), found, verify=verify, select=select
        )
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
) -> Steps[tuple[list[list[int]], list[CandidateFamily], _Selection]]:
    """Verify the candidates, escalate when nothing non-empty verifies, select (Eq. 20)."""
    cfg, game = run.config, run.game
    candidates, families = yield from _verify_staged(run, candidates, families)
    selection = select(cfg, game, candidates)
    if selection[0] == 0 and not selection[4] and attributed.group:
        extra = yield from _group_candidates(run, attributed, candidates)
        if extra:
            candidates = candidates + extra
            families = families + ["answer_group"] * len(extra)
            selection = select(cfg, game, candidates)
    if (
        selection[0] == 0
        and not selection[4]
        and cfg.escalation
        and not game.recovers(game.full, cfg.verification.success_threshold)
    ):
        extra = yield from _escalate(run, attributed, candidates)
        if extra:
            candidates = candidates + extra
            families = families + ["escalation"] * len(extra)
            selection = select(cfg, game, candidates)
    if selection[0] == 0 and not game.recovers(game.full, cfg.verification.success_threshold):
        extra = yield from _residual_candidates(run, attributed, candidates)
        if extra:
            candidates = candidates + extra
            families = families + ["residual"] * len(extra)
            selection = select(cfg, game, candidates)
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
    cfg, game = run.config, run.game
    if z is None or cfg.verification.rule != "sequential":
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
        yield from verify(cfg, game, [game.full, candidate_coalition(k, current)])
        out.append(current)
        if select(cfg, game, [[], current])[0] == 1:
            break
    return out


def _promoted(
    run: Run, attributed: Attribution, candidates: list[list[int]], selection: _Selection
) -> _Selection:
    """Eq. 20's choice moved by the residual evidence (``core.residual``), when asked for.

    Only under the sequential rule and when the estimator sets ``residual_z``; a move
    whose extra deletions the answers all back (``core.answer_flags.answer_backed``)
    needs the estimator's ``answer_residual_z`` instead, when it sets one and
    ``answer_flags``. A move never goes to a candidate that is not admissible, so the
    gains, recovery and admissibility flags are unchanged.
    """
    z = getattr(attributed.estimator, "residual_z", None)
    if z is None or run.config.verification.rule != "sequential" or selection[4]:
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
        selection[0],
        selection[3],
        float(z),
        backed,
        None if backed_z is None else float(backed_z),
    )
    return (moved, *selection[1:])


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
    cfg, game = run.config, run.game
    psi = attributed.psi
    chain = sorted(attributed.group, key=lambda i: (psi[i], i))
    if len(chain) >= game.k:
        chain = chain[: game.k - 1]
    seen = {tuple(sorted(c)) for c in tried}
    if not chain or tuple(sorted(chain)) in seen:
        return []

    def admissible(j: int) -> Steps[bool]:
        yield from verify(cfg, game, [game.full, candidate_coalition(game.k, chain[:j])])
        return select(cfg, game, [[], chain[:j]])[0] == 1

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
    """Verify the candidates (Eq. 18-19); the fallback family only when it can matter.

    Under the sequential rule in a quiet run (every context's trials agree), once a
    nested/minimal candidate is admissible at the maximum value 1, no fallback
    candidate (a superset, later in Eq. 20's order) can be selected, so the fallback
    family is neither verified nor reported: it would only tie and cost trials. In a
    noisy run, or under the paper's rule, the whole family is verified as before.
    """
    cfg, game = run.config, run.game
    k = game.k
    core = sum(1 for f in families if f != "fallback")
    if cfg.verification.rule != "sequential" or core == len(candidates):
        yield from verify(cfg, game, [candidate_coalition(k, c) for c in candidates])
        return candidates, families
    yield from verify(cfg, game, [candidate_coalition(k, c) for c in candidates[:core]])
    selected = select(cfg, game, candidates[:core])[0]
    best = candidate_coalition(k, candidates[selected])
    if (
        selected > 0
        and not SequentialVerifier.noisy(game)
        and game.value(best) >= 1.0 - GAIN_TIE_TOLERANCE
    ):
        return candidates[:core], families[:core]
    yield from verify(cfg, game, [candidate_coalition(k, c) for c in candidates])
    return candidates, families


def select(config: ClearanceConfig, game: CoalitionGame, candidates: list[list[int]]) -> _Selection:
    """Eq. 20 under the run's verification rule.

    Args:
        config: the run's settings.
        game: the coalition table (the candidates verified).
        candidates: the cleared positions of each candidate, C_0 = [] first.

    Returns:
        (selected index, gains, recovered, admissible, undecided).
    """
    if config.verification.rule == "sequential":
        coalitions = [candidate_coalition(game.k, c) for c in candidates]
        selection = verifier(config).select(game, coalitions)
        return (
            selection.selected,
            selection.gains,
            selection.recovered,
            selection.admissible,
            selection.undecided,
        )
    selected, gains, recovered, admissible = select_candidate(
        game, candidates, config.verification.success_threshold
    )
    return selected, gains, recovered, admissible, False


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
        yield from verify(cfg, game, [game.full, coalition])
        verified.append(candidate)
        if select(cfg, game, [[], candidate])[0] == 1:
            break
    return verified


def verify(
    config: ClearanceConfig, game: CoalitionGame, coalitions: list[Coalition]
) -> Steps[None]:
    """Evaluate the candidates M minus C_j for Eq. 18-19.

    Under ``verification="sequential"`` the trials are what
    :meth:`SequentialVerifier.plan` asks for, round by round. Under the paper's rule,
    without adaptive trials every candidate gets T trials in one batch. With adaptive
    trials, candidates not yet in the table get all T trials at once (the decision is
    made on them, and a later round would cost a model round-trip), while those that
    attribution already evaluated once get the remaining T - 1 trials only if that
    trial passed the recovery threshold (otherwise they cannot be admissible). The
    first such candidate (in the order of Eq. 20's tie-break) gets them in the same
    batch as the new candidates: it is the one Eq. 20 needs next unless a new
    candidate before it recovers at 1.0, and evaluating it there saves a round-trip
    for at most T - 1 extra calls. Then the next open candidate (first trial passed,
    fewer than T trials) gets its trials alone and, unless it recovers at the maximum
    possible value 1.0, the remaining open ones go in one further batch. A candidate
    after one that already recovers at 1.0 can never be selected (Eq. 20 breaks ties
    by the smaller index), so it gets no further trials; Eq. 20's choice is unchanged
    by any of this.

    Args:
        config: the run's settings.
        game: the coalition table.
        coalitions: M minus C_j for each candidate.

    Returns:
        Nothing; the steps evaluate the trials the rule asks for.
    """
    cfg = config
    if cfg.verification.rule == "sequential":
        rule = verifier(cfg)
        while plan := rule.plan(game, coalitions):
            yield Evaluate(plan)
        return None
    if not cfg.adaptive_trials:
        yield Evaluate(want((coalitions, cfg.trials)))
        return None
    threshold = cfg.verification.success_threshold
    fresh = [c for c in coalitions if game.trials_of(c) == 0]
    known = [
        c
        for c in coalitions[1:]
        if 0 < game.trials_of(c) < cfg.trials and game.recovers(c, threshold)
    ]
    yield Evaluate(want((fresh + known[:1], cfg.trials), (coalitions, 1)))

    def settled_best(c: Coalition) -> bool:
        return (
            game.trials_of(c) >= cfg.trials
            and game.recovers(c, threshold)
            and game.value(c) >= 1.0 - GAIN_TIE_TOLERANCE
        )

    open_ = []
    for c in coalitions[1:]:
        if settled_best(c):
            break  # nothing after it can be selected
        if game.trials_of(c) < cfg.trials and game.recovers(c, threshold):
            open_.append(c)
    if not open_:
        return None
    first = open_[0]
    yield Evaluate([(first, cfg.trials)])
    if settled_best(first):
        return None
    yield Evaluate(want((open_[1:], cfg.trials)))
    return None
