"""The simulated world's reader: finds the known memories in a prompt and asks the world.

:class:`TextReader` is the reader of the stand-in model's world mode
(:class:`~.standin.StandInModel`): it recognises which known memory texts a rendered prompt
contains and answers as the evidence world's reader would on them; as a judge it grades a
candidate by normalised exact match against the prompt's reference, or, without one,
against the world's answer on the memories shown to the judge. A simulation, not an LLM.

The package's prompts fence data as ``<tag ...>`` newline, text, newline ``</tag>``
(:mod:`meclear_integrations.judges.answer_prompts`); :func:`fenced_block` finds one with
plain string search (linear in the prompt), for the reader and the stand-in model alike.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping

from ..judges.answer_prompts import neutralize_tags
from .world import EvidenceWorld, exact_match_score

__all__ = ["TextReader", "fenced_block"]

_REASON = "simulated judge: normalised exact match"


def fenced_block(tag: str, prompt: str) -> str | None:
    """The text of the first ``<tag ...>`` / ``</tag>`` block of ``prompt``, or None.

    Args:
        tag: The fence's tag name.
        prompt: The rendered prompt.

    Returns:
        The block's text, or None when the prompt has no such block.
    """
    start = prompt.find(f"<{tag}")
    while start >= 0:
        after = prompt[start + len(tag) + 1 : start + len(tag) + 2]
        if after in (">", " "):
            break
        start = prompt.find(f"<{tag}", start + 1)
    if start < 0:
        return None
    body = prompt.find(">\n", start)
    if body < 0:
        return None
    end = prompt.find(f"\n</{tag}>", body + 1)
    if end < 0:
        return None
    return prompt[body + 2 : end]


class TextReader:
    """Answers a rendered prompt: finds which known memory texts it contains, asks the world.

    Args:
        world: The evidence world that answers.
        memories: Memory id -> text, the memories the reader can recognise in a prompt.
        case_id: The case's id (part of the answer seed).

    The n-th identical coalition seen in a prompt is answered as trial n, so repeated calls
    reproduce the engine's per-trial seeding.
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

    def read(self, memory_ids: Iterable[str], trial: int) -> str:
        """The world's answer on the memories ``memory_ids`` at trial ``trial`` (no prompt).

        Args:
            memory_ids: The ids of the memories the reader sees.
            trial: The trial index (seeds the sampled answer).

        Returns:
            The answer.
        """
        return self.world.answer(memory_ids, case_id=self.case_id, trial=trial)

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
        return self.read(ids, trial)

    def judge(self, prompt: str, candidate: str) -> tuple[bool, str]:
        """Grade ``candidate`` by normalised exact match (the judge prompt's verdict).

        Against the prompt's ``<reference_answer>`` block; without one, against the world's
        answer (trial 0) on the memories shown in its ``<memories>`` block.

        Args:
            prompt: The judge prompt.
            candidate: The candidate answer of its ``<candidate_answer>`` block.

        Returns:
            (the verdict, its one-line reason).
        """
        reference = fenced_block("reference_answer", prompt)
        if reference is None:
            shown = self.present(fenced_block("memories", prompt) or "")
            reference = self.read(shown, 0)
        return bool(exact_match_score(candidate, reference)), _REASON
