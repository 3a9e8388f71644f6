"""The simulated world's reply to a rendered prompt: an answer, or a judge verdict.

Framework adapters (the LangChain chat model, the LlamaIndex LLM) share this one contract.
A prompt holding a ``<candidate_answer>`` block is one of the package's judge prompts:
with a ``<reference_answer>`` block the candidate is graded by normalised exact match;
without one, against the world's answer on the memories shown in the ``<memories>``
block. Any other prompt is answered by the world's reader. A free-text judge prompt is
answered as the verdict protocol asks (a reason, then ``VERDICT <nonce>: CORRECT`` /
``INCORRECT`` with the prompt's nonce, :mod:`meclear_integrations.judges.protocol`); a
structured-output judge prompt (no nonce) with the JSON object ``{"reason", "correct"}``.
Blocks are located with plain string search (linear in the prompt). A simulation, not
an LLM.
"""

from __future__ import annotations

import json

from ..judges.protocol import read_nonce, verdict_reply
from .evaluator import TextReader
from .world import exact_match_score

__all__ = ["fenced_block", "simulated_reply"]

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


def simulated_reply(reader: TextReader, prompt: str) -> str:
    """What the simulated world replies to ``prompt`` (an answer, or a judge verdict).

    Args:
        reader: The reader that recognises the memories in a prompt.
        prompt: A rendered answer prompt, or a judge prompt with a fenced candidate answer.

    Returns:
        The answer text, or the judge's verdict in the package's reply format.
    """
    candidate = fenced_block("candidate_answer", prompt)
    if candidate is None:
        return reader.answer(prompt)
    reference = fenced_block("reference_answer", prompt)
    if reference is None:
        shown = reader.present(fenced_block("memories", prompt) or "")
        reference = reader.world.answer(shown, case_id=reader.case_id, trial=0)
    correct = bool(exact_match_score(candidate, reference))
    nonce = read_nonce(prompt)
    if nonce is None:
        return json.dumps({"reason": _REASON, "correct": correct})
    return verdict_reply(nonce, correct, reason=_REASON)
