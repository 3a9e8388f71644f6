"""Coalitions as bitmasks over the frozen context (bit i = memory m_i present)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

__all__ = ["Coalition", "full", "members", "size", "without"]

Coalition = int
"""A subset S of the frozen context, as a bitmask of memory positions."""


def full(k: int) -> Coalition:
    """The whole context M of ``k`` memories."""
    return (1 << k) - 1


def without(coalition: Coalition, *positions: int) -> Coalition:
    """``coalition`` minus the memories at ``positions``."""
    for p in positions:
        coalition &= ~(1 << p)
    return coalition


def from_positions(positions: Iterable[int]) -> Coalition:
    """The coalition holding exactly ``positions``."""
    mask = 0
    for p in positions:
        mask |= 1 << p
    return mask


def members(coalition: Coalition) -> Iterator[int]:
    """Positions in ``coalition``, in retrieval order."""
    while coalition:
        low = coalition & -coalition
        yield low.bit_length() - 1
        coalition ^= low


def size(coalition: Coalition) -> int:
    """|S|."""
    return coalition.bit_count()
