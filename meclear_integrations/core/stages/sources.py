"""Candidate sources: where the clearance stage looks when H^'s candidates are not enough.

Algorithm 1 verifies the nested candidates of H^ (Eq. 17) and selects by Eq. 20. When
nothing non-empty is admissible, the clearance stage walks :func:`fallback_sources` in
order; each source that is wanted for the selection so far proposes candidates, verified
like any other (Eq. 18-19 against M, under the run's rule), and Eq. 20 selects again.
The surrogate source also looks when the run is undecided (it would abstain): a
candidate of its that verifies is selected, one that does not leaves the run undecided.

==================  ============================================  =========================
source              candidates                                    on when
==================  ============================================  =========================
answer group        nested prefixes of the memories that alone    the run grouped answers
                    give the failing answer (``core.grouping``)   (``answer_groups``)
escalation          subsets of the negatively valued memories     ``escalation``
                    (``core.escalation``)
surrogate           nested prefixes of the memories a Lasso       ``verification.
                    surrogate fitted on the table weighs below    surrogate`` (on by
                    -tau, most harmful first (``core.surrogate``) default; off in the
                                                                  paper preset)
escalation          (as above; after the surrogate)
residual            the best-looking candidate plus a residual    ``table_evidence.
                    harm (``core.residual``)                      residual_z``, an exact
                                                                  table, interval evidence
==================  ============================================  =========================

A source may also move Eq. 20's choice once every source has run (:meth:`CandidateSource.
moved`: the residual source moves it to a larger admissible candidate whose extra deletions
the residual evidence shows harmful). Their settings are the clearance policy's
(``ClearanceConfig``), never the estimator's. The recency candidate (``core.stages.recency``)
is tried before attribution and the carriers (``core.stages.carriers``) after a verified
clearance; both are verified by the same rule.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 16-20.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from ..answer_flags import answer_backed
from ..escalation import escalation_candidates, escalation_pool, wide_pool
from ..report import CandidateFamily
from ..residual import promote, residual_z
from ..surrogate import SurrogateCandidates, surrogate_weights
from ..verification.rule import candidate_coalition
from ..verification.sequential import Selection
from .attribution import Attribution
from .steps import Evaluate, Run, Steps, evaluated

__all__ = [
    "AnswerGroupSource",
    "CandidateSource",
    "EscalationSource",
    "ResidualSource",
    "SurrogateSource",
    "fallback_sources",
]


class CandidateSource(Protocol):
    """Proposes clearance candidates when H^'s are not enough (module docstring)."""

    family: CandidateFamily
    """How its candidates are reported (``ClearanceCandidate.family``)."""

    def wanted(self, run: Run, attributed: Attribution, selection: Selection) -> bool:
        """Whether it looks, given Eq. 20's selection so far."""
        ...

    def candidates(
        self, run: Run, attributed: Attribution, tried: list[list[int]]
    ) -> Steps[list[list[int]]]:
        """Its candidates, verified (Eq. 18-19); none that was ``tried``."""
        ...

    def moved(
        self, run: Run, attributed: Attribution, candidates: list[list[int]], selection: Selection
    ) -> Selection:
        """Eq. 20's final choice, moved on this source's evidence (or ``selection``)."""
        ...


def _admissible_alone(run: Run, cleared: list[int]) -> Steps[bool]:
    """Verify M minus ``cleared`` against M alone; whether Eq. 20 selects it over C_0."""
    game = run.game
    yield from evaluated(run.rule.verify(game, [game.full, candidate_coalition(game.k, cleared)]))
    return run.rule.select(game, [[], cleared]).selected == 1


def _key(cleared: list[int]) -> tuple[int, ...]:
    return tuple(sorted(cleared))


def _first_admissible(run: Run, candidates: list[list[int]]) -> Steps[list[list[int]]]:
    """Verify ``candidates`` in order up to the first Eq. 20 admits; the ones verified."""
    verified: list[list[int]] = []
    for candidate in candidates:
        verified.append(candidate)
        if (yield from _admissible_alone(run, candidate)):
            break
    return verified


class AnswerGroupSource:
    """Nested candidates over the answer group (most negative contribution first)."""

    family: CandidateFamily = "answer_group"

    def wanted(self, run: Run, attributed: Attribution, selection: Selection) -> bool:
        """Nothing non-empty selected, the run not undecided, and a group found."""
        return selection.selected == 0 and not selection.undecided and bool(attributed.group)

    def candidates(
        self, run: Run, attributed: Attribution, tried: list[list[int]]
    ) -> Steps[list[list[int]]]:
        """The group's prefixes, verified; the shortest admissible one found by bisection.

        The memories that alone give the failing answer (``core.grouping.answer_group``),
        ordered by psi as Eq. 16 orders H^, cut into prefixes as Eq. 17 does. The whole
        group is verified first (Eq. 18-19 against M); when it is admissible, a binary
        search over the prefix length finds the shortest admissible prefix it reaches (each
        probe verified against M alone, as escalation verifies, so no two admissible
        candidates tie). Returned: the probes that were not admissible and the shortest
        admissible one, smallest first; never the whole context.
        """
        game = run.game
        psi = attributed.psi
        chain = sorted(attributed.group, key=lambda i: (psi[i], i))
        if len(chain) >= game.k:
            chain = chain[: game.k - 1]
        seen = {_key(c) for c in tried}
        if not chain or tuple(sorted(chain)) in seen:
            return []
        failed: list[int] = []
        lo, hi = 0, len(chain)
        if not (yield from _admissible_alone(run, chain[:hi])):
            return [chain]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if tuple(sorted(chain[:mid])) in seen:
                lo = mid  # tried already, and nothing tried was admissible
                continue
            if (yield from _admissible_alone(run, chain[:mid])):
                hi = mid
            else:
                failed.append(mid)
                lo = mid
        return [chain[:j] for j in sorted(failed)] + [chain[:hi]]

    def moved(
        self, run: Run, attributed: Attribution, candidates: list[list[int]], selection: Selection
    ) -> Selection:
        """Unchanged."""
        return selection


class SurrogateSource:
    """Nested prefixes of the memories a sparse linear surrogate weighs as harmful.

    Args:
        settings: the Lasso penalty and the longest prefix (``Verification.surrogate``).
    """

    family: CandidateFamily = "surrogate"

    def __init__(self, settings: SurrogateCandidates) -> None:
        self.settings = settings

    def wanted(self, run: Run, attributed: Attribution, selection: Selection) -> bool:
        """Nothing non-empty selected and the full context fails, undecided or not.

        An undecided run (a better-looking candidate whose trials keep disagreeing) is
        where another candidate helps most: one that verifies is selected by Eq. 20 and
        the run no longer abstains; one that does not leaves it undecided.
        """
        return selection.selected == 0 and not run.rule.recovers(run.game, run.game.full)

    def chain(self, run: Run) -> list[int]:
        """The memories weighed below -tau, most harmful first (at most ``max_size``, < K).

        The Lasso fit (``core.surrogate.surrogate_weights``) reads the coalition table as
        it stands: no model call.
        """
        game = run.game
        weights = surrogate_weights(game, self.settings.alpha)
        tau = run.config.harm_tolerance
        harmful = sorted((float(w), i) for i, w in enumerate(weights) if w < -tau)
        return [i for _, i in harmful][: min(self.settings.max_size, game.k - 1)]

    def candidates(
        self, run: Run, attributed: Attribution, tried: list[list[int]]
    ) -> Steps[list[list[int]]]:
        """The chain's prefixes (Eq. 17's shape), verified one by one, smallest first.

        Each prefix not ``tried`` already is verified against M alone (Eq. 18-19 under the
        run's rule, as escalation verifies) up to the first admissible one, so a larger
        prefix never ties with it; never the whole context.
        """
        chain = self.chain(run)
        seen = {_key(c) for c in tried}
        prefixes = [chain[:j] for j in range(1, len(chain) + 1)]
        return (yield from _first_admissible(run, [c for c in prefixes if _key(c) not in seen]))

    def moved(
        self, run: Run, attributed: Attribution, candidates: list[list[int]], selection: Selection
    ) -> Selection:
        """Unchanged."""
        return selection


class EscalationSource:
    """Subsets of the negatively valued memories (``core.escalation``)."""

    family: CandidateFamily = "escalation"

    def wanted(self, run: Run, attributed: Attribution, selection: Selection) -> bool:
        """Nothing non-empty selected, not undecided, and the full context fails."""
        return (
            selection.selected == 0
            and not selection.undecided
            and not run.rule.recovers(run.game, run.game.full)
        )

    def candidates(
        self, run: Run, attributed: Attribution, tried: list[list[int]]
    ) -> Steps[list[list[int]]]:
        """The search's new candidates verified one by one.

        Under the run's rule, smallest first, up to the first admissible one (so a larger
        candidate never ties with it); empty when the search finds nothing.
        """
        cfg, game = run.config, run.game
        estimator = attributed.estimator
        psi = attributed.psi
        suspects = estimator.suspects
        pools = [escalation_pool(psi, cfg.budget.escalation_pool, suspects)]
        if attributed.sampled:  # a sampled estimate may put a harmful memory at or above 0
            pools.append(
                wide_pool(psi, 2 * cfg.budget.escalation_pool, suspects, cfg.harm_tolerance)
            )
        search = escalation_candidates(
            game, pools, lambda coalition: run.rule.recovers(game, coalition)
        )
        try:
            batch = next(search)
            while True:
                yield Evaluate(batch)
                batch = search.send(None)
        except StopIteration as done:
            found: list[list[int]] = done.value or []
        seen = {_key(c) for c in tried}
        # never an empty context: an answer from no memories says nothing about them
        found = [c for c in found if _key(c) not in seen and len(c) < game.k]
        return (yield from _first_admissible(run, found))  # smallest first

    def moved(
        self, run: Run, attributed: Attribution, candidates: list[list[int]], selection: Selection
    ) -> Selection:
        """Unchanged."""
        return selection


class ResidualSource:
    """The best-looking candidate plus a residual harm, and the residual move of Eq. 20.

    Args:
        z: the residual z a move or an extension needs (``TableEvidence.residual_z``).
        answer_z: the z a move whose extra deletions the answers back needs, when the
            answer flags are on (``TableEvidence.answer_residual_z``; None: ``z``).
    """

    family: CandidateFamily = "residual"

    def __init__(self, z: float, answer_z: float | None) -> None:
        self.z = z
        self.answer_z = answer_z

    def wanted(self, run: Run, attributed: Attribution, selection: Selection) -> bool:
        """Nothing non-empty selected, the full context fails, the table is complete."""
        return (
            selection.selected == 0
            and not run.rule.recovers(run.game, run.game.full)
            and attributed.estimator.enumerates
        )

    def candidates(
        self, run: Run, attributed: Attribution, tried: list[list[int]]
    ) -> Steps[list[list[int]]]:
        """When nothing non-empty is admissible: the best-looking candidate plus a residual harm.

        The tried non-empty candidate C whose context M minus C has the highest value (it
        gains, but does not verifiably recover) is extended by the memory most harmful in
        the residual game on M minus C (``core.residual``: z above ``residual_z``, table
        evidence only), and the extension is verified against M as escalation verifies;
        at most two extensions in a row; never the whole context.
        """
        game = run.game
        k = game.k
        seen = {_key(c) for c in tried}
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
            if best[0] <= self.z or len(current) + 1 >= k:
                break
            current = [*current, best[1]]
            if tuple(sorted(current)) in seen:
                break
            out.append(current)
            if (yield from _admissible_alone(run, current)):
                break
        return out

    def moved(
        self, run: Run, attributed: Attribution, candidates: list[list[int]], selection: Selection
    ) -> Selection:
        """Eq. 20's choice moved by the residual evidence (``core.residual``).

        A move whose extra deletions the answers all back (``core.answer_flags.
        answer_backed``) needs ``answer_z`` instead, when it is set and the answer flags
        are on. A move never goes to a candidate that is not admissible, so the gains,
        recovery and admissibility flags are unchanged; never when undecided, and only on
        a complete table.
        """
        if selection.undecided or not attributed.estimator.enumerates:
            return selection
        game = run.game
        coalitions = [candidate_coalition(game.k, c) for c in candidates]
        backed = 0
        if self.answer_z is not None and run.config.table_evidence.answer_flags:
            threshold = run.config.verification.success_threshold
            backed = sum(1 << i for i in answer_backed(game, threshold))
        moved = promote(
            game,
            coalitions,
            selection.selected,
            selection.admissible,
            float(self.z),
            backed,
            None if self.answer_z is None else float(self.answer_z),
        )
        return replace(selection, selected=moved)


def fallback_sources(run: Run) -> list[CandidateSource]:
    """The candidate sources the clearance stage walks, in order, from the run's policy.

    Args:
        run: the run (its configuration and verification rule).

    Returns:
        The answer group, the surrogate (``Verification.surrogate``), escalation
        (``escalation``) and the residual source
        (``table_evidence.residual_z`` under a rule with interval evidence).
    """
    cfg = run.config
    sources: list[CandidateSource] = [AnswerGroupSource()]
    if cfg.verification.surrogate is not None:
        sources.append(SurrogateSource(cfg.verification.surrogate))
    if cfg.escalation:
        sources.append(EscalationSource())
    evidence = cfg.table_evidence
    if evidence.residual_z is not None and run.rule.interval_evidence:
        sources.append(ResidualSource(evidence.residual_z, evidence.answer_residual_z))
    return sources
