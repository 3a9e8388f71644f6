"""Evaluators and readers backed by the simulated evidence world (a simulation, not an LLM)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping

from ..core.answers import note_answer
from ..core.memory import Memory
from ..judges.answer_prompts import neutralize_tags
from .world import EvidenceWorld, exact_match_score

__all__ = ["SimulatedEvaluator", "TextReader", "same_answer"]


class SimulatedEvaluator:
    """``evaluate(coalition, trial)``: the world's reader answers, the exact-match judge scores.

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

    def answer(self, coalition: tuple[Memory, ...], trial: int) -> str:
        """The world's answer on ``coalition`` at trial ``trial``.

        Args:
            coalition: The memories kept in the context.
            trial: The trial index (seeds the sampled answer).

        Returns:
            The simulated reader's answer.
        """
        return self.world.answer((m.id for m in coalition), case_id=self.case_id, trial=trial)

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


class TextReader:
    """Answers a rendered prompt: finds which known memory texts it contains, asks the world.

    Args:
        world: The evidence world that answers.
        memories: Memory id -> text, the memories the reader can recognise in a prompt.
        case_id: The case's id (part of the answer seed).

    Framework adapters (a LangChain chat model, a LlamaIndex LLM) wrap this so that the
    real retrieval/prompt path runs offline. The n-th identical coalition seen is answered
    as trial n, so repeated calls reproduce the engine's per-trial seeding.
    """

    def __init__(
        self, world: EvidenceWorld, memories: Mapping[str, str], *, case_id: str = ""
    ) -> None:
        self.world = world
        self.memories = dict(memories)
        self.case_id = case_id
        self._seen: Counter[tuple[str, ...]] = Counter()
        self._lock = threading.Lock()

    def present(self, prompt: str) -> tuple[str, ...]:
        """Ids of the known memories whose text appears in ``prompt``.

        A text counts as is, or escaped as the package's prompts render data.

        Args:
            prompt: The rendered prompt.

        Returns:
            The ids, sorted.
        """
        return tuple(
            sorted(
                mid
                for mid, text in self.memories.items()
                if text and (text in prompt or neutralize_tags(text) in prompt)
            )
        )

    def answer(self, prompt: str) -> str:
        """Answer a rendered prompt as the world's reader would on the memories it holds.

        Args:
            prompt: The rendered prompt.

        Returns:
            The answer; repeated prompts with the same memories count as later trials.
        """
        ids = self.present(prompt)
        with self._lock:
            trial = self._seen[ids]
            self._seen[ids] += 1
        return self.world.answer(ids, case_id=self.case_id, trial=trial)

    def score(self, prompt: str, reference: str) -> float:
        """Answer ``prompt`` and score the answer against ``reference``.

        Args:
            prompt: The rendered prompt.
            reference: The gold answer.

        Returns:
            1.0 for an exact (normalised) match, else 0.0.
        """
        return exact_match_score(self.answer(prompt), reference)
