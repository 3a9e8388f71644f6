"""Fenced blocks of the package's rendered prompts, as the stand-in model reads them.

The package's prompts fence data as ``<tag ...>`` newline, text, newline ``</tag>``
(:mod:`meclear_integrations.judges.answer_prompts`). Blocks are located with plain string
search (linear in the prompt).
"""

from __future__ import annotations

__all__ = ["fenced_block"]


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
