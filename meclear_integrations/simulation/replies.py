"""The simulated world's reply to a rendered prompt: an answer, or a judge verdict.

Framework adapters (the LangChain chat model, the LlamaIndex LLM) share this one contract.
A prompt holding a ``<candidate_answer>`` block is one of the package's judge prompts:
with a ``<reference_answer>`` block the candidate is graded by normalised exact match;
without one, against the world's answer on the memories shown in the ``<memories>``
block. Any other prompt is answered by the world's reader. Verdicts read
``VERDICT: CORRECT`` / ``VERDICT: INCORRECT``. A simulation, not an LLM.
"""

from __future__ import annotations

import re

from .evaluator import TextReader
from .world import exact_match_score

__all__ = ["simulated_reply"]

_FENCE = r"<{tag}[^>]*>\n(.*?)\n</{tag}>"


def _block(tag: str, prompt: str) -> str | None:
    match = re.search(_FENCE.format(tag=tag), prompt, flags=re.S)
    return match.group(1) if match else None


def simulated_reply(reader: TextReader, prompt: str) -> str:
    """What the simulated world replies to ``prompt`` (an answer, or a judge verdict)."""
    candidate = _block("candidate_answer", prompt)
    if candidate is None:
        return reader.answer(prompt)
    reference = _block("reference_answer", prompt)
    if reference is None:
        shown = reader.present(_block("memories", prompt) or "")
        reference = reader.world.answer(shown, case_id=reader.case_id, trial=0)
    verdict = "CORRECT" if exact_match_score(candidate, reference) else "INCORRECT"
    return f"VERDICT: {verdict}\n(simulated judge: normalised exact match)"
