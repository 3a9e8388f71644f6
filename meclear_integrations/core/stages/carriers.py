"""After a verified clearance: every kept memory that carries the same harm (the carriers).

Minimal clearance (Eq. 20) removes what this query needs removed. Under redundant harm
(Theorem 1, Appendix A.2: r copies of one wrong claim, each with ``d_i = 0``) the copies
that the answer survives beside the kept evidence stay in the context, and in the store.
A team cleaning a memory store needs them all. The test, per kept memory m:

- the agent's answer on m **alone** agrees (the evaluator's answer equivalence,
  ``core.answers``; not string equality) with an answer the full context M failed with,
  and the judge scores it below the success threshold: m carries the harmful answer by
  itself, whether or not it can flip the answer beside the evidence;
- control: the answer on the **empty** context. When a failing answer of M is the
  no-memory answer (M fails by abstaining), agreeing with it says nothing about a memory,
  so no carrier is named (``harm_is_abstention``); a memory whose answer is the
  no-memory answer is never a carrier.

Cost: one evaluator call (one trial) per kept memory plus one for the control, in one
batch; coalitions already in the table (singletons that attribution or the unexplained
check evaluated) cost nothing; the judge is called once per distinct answer when the
evaluator deduplicates (``judges.task``). When the carriers were not asked for
(``find_carriers`` off, minimal scope) and are reported only because the run grouped its
memories by answer, only the memories already asked alone are read: no call. With
``clearance_scope="complete"`` the context without the carriers is verified like any
candidate (Eq. 18-19 against M) and must score at least the minimal clearance's value;
only then are they withheld.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Theorem 1, Eq. 18-20.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..answers import plain_same
from ..game import CoalitionGame, from_positions
from ..grouping import failing_answers, silent_answers, supports_answer
from ..redaction import redact
from ..report import CarrierEvidence, CarrierStatus, ClearanceReport
from ..verification.rule import GAIN_TIE_TOLERANCE, candidate_coalition
from .outcomes import cost
from .steps import Evaluate, Run, Steps, evaluated, want

__all__ = ["CarrierScan", "carriers", "with_carriers", "withhold_carriers"]

_SHOWN = 300
"""Characters of an answer kept in the evidence."""


@dataclass(slots=True)
class CarrierScan:
    """What the carriers search found.

    Args:
        status: how it ended.
        carriers: the carriers, in retrieval order, with their evidence.
        calls: evaluator calls it made.
    """

    status: CarrierStatus
    carriers: list[CarrierEvidence] = field(default_factory=list)
    calls: int = 0


def carriers(run: Run, cleared: Sequence[int]) -> Steps[CarrierScan]:
    """Find the carriers among the memories the verified clearance kept.

    Args:
        run: the run (its full context evaluated).
        cleared: positions the verified clearance removed.

    Returns:
        The scan: status, carriers with evidence, calls made.
    """
    cfg, game = run.config, run.game
    harmful = failing_answers(game, cfg.verification.success_threshold)
    if not harmful:
        return CarrierScan(status="answers_not_reported")
    kept = [i for i in range(game.k) if i not in set(cleared)]
    singles = [from_positions([i]) for i in kept]
    if not cfg.carriers_wanted:  # reported because the run grouped: no call beyond its tests
        singles = [c for c in singles if game.trials_of(c)]
    before = game.evaluator_calls
    yield Evaluate(want(([0], run.single), (singles, run.single)))
    calls = game.evaluator_calls - before
    same = game.same or plain_same
    silent = silent_answers(game)
    if not silent:
        return CarrierScan(status="answers_not_reported", calls=calls)
    if any(same(h, s) for h in harmful for s in silent):
        return CarrierScan(status="harm_is_abstention", calls=calls)
    found: list[CarrierEvidence] = []
    for i in kept:
        evidence = _evidence(game, i, harmful, cfg.verification.success_threshold)
        if evidence is not None:
            found.append(evidence)
    return CarrierScan(status="found" if found else "none_found", carriers=found, calls=calls)


def _evidence(
    game: CoalitionGame, position: int, harmful: Sequence[str], threshold: float
) -> CarrierEvidence | None:
    """The evidence that the memory at ``position`` carries a harmful answer, or None."""
    matched = supports_answer(game, position, harmful, threshold)
    if matched is None:
        return None
    single = from_positions([position])
    scores = game.scores[single]
    shown = next(a for a in game.answers_of(single) if a is not None)
    return CarrierEvidence(
        memory_id=game.context[position].id,
        position=position,
        answer=redact(shown)[:_SHOWN],
        harmful_answer=redact(matched)[:_SHOWN],
        score=sum(scores) / len(scores),
        trials=len(scores),
    )


def withhold_carriers(
    run: Run,
    cleared: Sequence[int],
    found: Sequence[CarrierEvidence],
) -> Steps[list[int] | None]:
    """Verify the context without the carriers too (``clearance_scope="complete"``).

    The candidate M minus (cleared + carriers) is verified against M as a clearance
    candidate (Eq. 18-19 under the run's rule) and must score at least the minimal
    clearance's value; an empty context is never returned.

    Args:
        run: the run.
        cleared: positions of the verified minimal clearance.
        found: the carriers.

    Returns:
        The positions to remove (cleared + carriers) when verified, else None.
    """
    game = run.game
    complete = sorted(set(cleared) | {c.position for c in found})
    if not found or len(complete) >= game.k:
        return None
    minimal = candidate_coalition(game.k, list(cleared))
    coalition = candidate_coalition(game.k, complete)
    yield from evaluated(run.rule.verify(game, [game.full, coalition]))
    if run.rule.select(game, [[], complete]).selected != 1:
        return None
    if game.value(coalition) < game.value(minimal) - GAIN_TIE_TOLERANCE:
        return None
    return complete


def with_carriers(run: Run, report: ClearanceReport, cleared: set[int]) -> Steps[ClearanceReport]:
    """``report`` with the carriers of its verified harm (:func:`carriers`).

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
