"""What a returned context achieves, measured on trials no method saw (SIMULATED).

Methods see trials 0, 1, ... of the world's reader; the measurement uses fresh trial
indices from :data:`FRESH_TRIAL` on, so a method cannot have been lucky on the very draws
that score it. Correctness is exact match with the gold reference, whatever judge the
methods were given: the user's answer is right or wrong, not what the judge thought.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from meclear_integrations.simulation import EvidenceWorld, exact_match_score

__all__ = ["FRESH_TRIAL", "ContextQuality", "measure_context"]

FRESH_TRIAL = 1_000_000
"""First trial index of the recovery measurement (methods use small indices)."""


class ContextQuality(BaseModel):
    """How good one returned context is for its query."""

    model_config = ConfigDict(frozen=True)

    recovered: bool
    """Binary Task Recovery on unseen trials: every fresh trial answers correctly."""
    expected_recovery: float
    """P(recovered) computed exactly from the world: accuracy ** trials."""
    accuracy: float
    """P(one fresh answer is correct), exactly from the world."""
    evidence_correct: bool | None = None
    """The kept context's evidence favours the reference outright
    (:meth:`EvidenceWorld.favours`; None where no world computes it, e.g. real models)."""


def measure_context(
    world: EvidenceWorld,
    reference: str,
    kept: Sequence[str],
    *,
    case_id: str,
    trials: int,
) -> ContextQuality:
    """Recovery on ``trials`` fresh trials of ``kept`` and its exact expectation.

    Args:
        world: The case's evidence world.
        reference: The gold answer.
        kept: The ids of the memories left in the context.
        case_id: The case's id (part of the seeds).
        trials: The number of fresh trials.

    Returns:
        The context's accuracy and recovery.
    """
    answers = [world.answer(kept, case_id=case_id, trial=FRESH_TRIAL + r) for r in range(trials)]
    accuracy = world.correct_probability(kept, reference, case_id=case_id)
    return ContextQuality(
        recovered=all(exact_match_score(a, reference) for a in answers),
        expected_recovery=accuracy**trials,
        accuracy=accuracy,
        evidence_correct=world.favours(kept, reference),
    )
