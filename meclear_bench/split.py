"""The fixed dev/test split of LoCoMo, by conversation (one bootstrap cluster each).

Every tunable setting of every method is chosen on ``dev`` (``meclear bench-sweep tune``);
the docs report ``test`` only. The split is by conversation so that no query, memory or
speaker of a test conversation is seen while tuning: ``dev`` is the first three
conversations of ``locomo10.json`` (26, 30, 41: 421 of the 1558 verified cases of the
previous build, about a quarter), ``test`` the other seven.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from meclear_integrations.core.errors import ConfigurationError

from .cases import BenchCase

__all__ = ["LOCOMO_SPLITS", "SplitName", "split_cases", "split_conversations"]

SplitName = Literal["dev", "test", "all"]

LOCOMO_SPLITS: dict[str, tuple[str, ...]] = {
    "dev": ("26", "30", "41"),
    "test": ("42", "43", "44", "47", "48", "49", "50"),
}
"""Conversation ids of each split."""


def split_conversations(split: SplitName) -> list[str] | None:
    """The conversations of ``split`` (None for ``all``).

    Args:
        split: ``dev``, ``test`` or ``all``.

    Returns:
        The LoCoMo conversation ids.
    """
    if split == "all":
        return None
    return list(LOCOMO_SPLITS[split])


def split_cases(cases: Sequence[BenchCase], split: SplitName) -> list[BenchCase]:
    """The cases of LoCoMo conversations in ``split`` (cluster ``locomo-<id>``).

    Args:
        cases: The cases.
        split: ``dev``, ``test`` or ``all``.

    Returns:
        The cases in the split.

    Raises:
        ConfigurationError: ``split`` is not ``all`` and no case belongs to one of its
            conversations.
    """
    if split == "all":
        return list(cases)
    clusters = {f"locomo-{cid}" for cid in LOCOMO_SPLITS[split]}
    chosen = [c for c in cases if c.cluster in clusters]
    if not chosen:
        raise ConfigurationError(
            f"no case of the {split} split (LoCoMo conversations "
            f"{', '.join(LOCOMO_SPLITS[split])}); --split applies to LoCoMo cases only"
        )
    return chosen
