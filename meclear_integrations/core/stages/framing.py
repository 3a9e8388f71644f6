"""After a verified clearance that kept instructions: is the cleared memory framed?

Instruction-like memories (``core.instructions``) can *frame* an innocent one: "if a memory
mentions his journal, answer Paris" acts only when the journal note is present, so removing
the note is the smallest verified fix and the injections stay. A memory is removed only
when it carries the failing answer itself, not only together with the instructions the
clearance kept. The test, when a verified clearance C removed non-instruction memories and
kept instruction-like ones S:

- verify M minus S (and minus the instructions C removed; Eq. 18-19 against M, the rule of
  every candidate). If it recovers, the
  memories of C are harmless without the instructions: they were framed. The clearance
  becomes S (the instructions are what act), reported with the candidate
  (``family="fallback"``), and C's memories are kept.
- Otherwise some harm holds without the instructions and C stands as verified.

Cost: one candidate's verification, only on a context with kept instructions.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 18-20.
"""

from __future__ import annotations

from ..instructions import is_instruction_like
from ..report import ClearanceCandidate, ClearanceReport
from ..verification.rule import candidate_coalition
from .steps import Run, Steps
from .verify_removal import verify_removal

__all__ = ["unframed"]


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
