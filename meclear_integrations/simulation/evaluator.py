"""The engine's evaluator on the simulated evidence world (a simulation, not an LLM)."""

from __future__ import annotations

from ..core.answers import note_answer
from ..core.memory import Memory
from .reader import TextReader
from .standin import StandInModel
from .world import EvidenceWorld, exact_match_score

__all__ = ["SimulatedEvaluator", "same_answer"]


class SimulatedEvaluator:
    """``evaluate(coalition, trial)``: the stand-in model answers, the exact-match judge scores.

    The answer is the world-mode stand-in's (:class:`~.standin.StandInModel`) on the
    coalition's memory ids.

    Args:
        world: The evidence world that answers.
        reference: The gold answer.
        case_id: The case's id (part of the answer seed).

    Example:
        >>> from meclear_integrations.simulation import redundant_harm_example
        >>> case = redundant_harm_example()
        >>> evaluate = case.evaluator()
        >>> evaluate(tuple(case.memories), 0)  # both faults present: the wrong answer
        0.0
    """

    def __init__(self, world: EvidenceWorld, reference: str, *, case_id: str = "") -> None:
        self.world = world
        self.reference = reference
        self.case_id = case_id
        self.model = StandInModel(TextReader(world, {}, case_id=case_id))
        """The world-mode stand-in that answers."""

    def answer(self, coalition: tuple[Memory, ...], trial: int) -> str:
        """The world's answer on ``coalition`` at trial ``trial``.

        Args:
            coalition: The memories kept in the context.
            trial: The trial index (seeds the sampled answer).

        Returns:
            The simulated reader's answer.
        """
        return self.model.read((m.id for m in coalition), trial)

    def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        """Score ``coalition`` on trial ``trial``.

        Args:
            coalition: The memories kept in the context.
            trial: The trial index (seeds the sampled answer).

        Returns:
            1.0 when the answer matches the reference exactly (normalised), else 0.0.
        """
        answer = self.answer(coalition, trial)
        note_answer(
            answer, same=same_answer
        )  # the engine keeps it (carriers, unexplained failures)
        return exact_match_score(answer, self.reference)


def same_answer(first: str, second: str) -> bool:
    """The simulated reader's answers are its claims: equal once normalised."""
    return exact_match_score(first, second) == 1.0
