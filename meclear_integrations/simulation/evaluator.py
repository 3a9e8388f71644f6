"""Evaluators and readers backed by the simulated evidence world (a simulation, not an LLM)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping

from ..core.memory import Memory
from ..prompts import neutralize_tags
from .world import EvidenceWorld, exact_match_score

__all__ = ["SimulatedEvaluator", "TextReader"]


class SimulatedEvaluator:
    """``evaluate(coalition, trial)``: the world's reader answers, the exact-match judge scores."""

    def __init__(self, world: EvidenceWorld, reference: str, *, case_id: str = "") -> None:
        self.world = world
        self.reference = reference
        self.case_id = case_id

    def answer(self, coalition: tuple[Memory, ...], trial: int) -> str:
        return self.world.answer((m.id for m in coalition), case_id=self.case_id, trial=trial)

    def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        return exact_match_score(self.answer(coalition, trial), self.reference)


class TextReader:
    """Answers a rendered prompt: finds which known memory texts it contains, asks the world.

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
        """
        return tuple(
            sorted(
                mid
                for mid, text in self.memories.items()
                if text and (text in prompt or neutralize_tags(text) in prompt)
            )
        )

    def answer(self, prompt: str) -> str:
        ids = self.present(prompt)
        with self._lock:
            trial = self._seen[ids]
            self._seen[ids] += 1
        return self.world.answer(ids, case_id=self.case_id, trial=trial)

    def score(self, prompt: str, reference: str) -> float:
        return exact_match_score(self.answer(prompt), reference)
