"""Coalitions as bitmasks over the frozen context (bit i = memory m_i present)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
else:
    from .lazy import np

__all__ = ["Coalition", "full", "members", "membership_matrix", "size", "without"]

Coalition = int
"""A subset S of the frozen context, as a bitmask of memory positions."""


def full(k: int) -> Coalition:
    """The whole context M of ``k`` memories.

    Args:
        k: the number of memories.

    Returns:
        The coalition of every position.
    """
    return (1 << k) - 1


def without(coalition: Coalition, *positions: int) -> Coalition:
    """``coalition`` minus the memories at ``positions``.

    Args:
        coalition: a coalition.
        *positions: positions to remove.

    Returns:
        The smaller coalition.
    """
    for p in positions:
        coalition &= ~(1 << p)
    return coalition


def from_positions(positions: Iterable[int]) -> Coalition:
    """The coalition holding exactly ``positions``.

    Args:
        positions: memory positions.

    Returns:
        The coalition.
    """
    mask = 0
    for p in positions:
        mask |= 1 << p
    return mask


_BYTE_POSITIONS: tuple[tuple[int, ...], ...] = tuple(
    tuple(i for i in range(8) if byte >> i & 1) for byte in range(256)
)
"""The bit positions set in each byte value, ascending."""


def members(coalition: Coalition) -> Iterator[int]:
    """Positions in ``coalition``, in retrieval order.

    Args:
        coalition: a coalition.

    Returns:
        Its positions, ascending.
    """
    if coalition < 0 or coalition.bit_length() <= 64:  # a machine word: bit by bit
        while coalition:
            low = coalition & -coalition
            yield low.bit_length() - 1
            coalition ^= low
        return
    # a wide coalition: byte by byte (clearing bits one at a time rewrites the whole
    # integer each time, quadratic in K)
    for base, byte in enumerate(coalition.to_bytes((coalition.bit_length() + 7) // 8, "little")):
        if byte:
            for i in _BYTE_POSITIONS[byte]:
                yield 8 * base + i


def size(coalition: Coalition) -> int:
    """|S|.

    Args:
        coalition: a coalition.

    Returns:
        The number of memories in it.
    """
    return coalition.bit_count()


def membership_matrix(coalitions: Sequence[Coalition], k: int) -> np.ndarray:
    """Rows of 0/1 floats, row r column i = 1 when memory i is in ``coalitions[r]``.

    Coalitions are Python ints of any width (K may exceed 63): they are unpacked byte-wise,
    never converted to a fixed-width integer type.

    Args:
        coalitions: coalitions.
        k: the number of memories.

    Returns:
        A len(coalitions) x K matrix.
    """
    if not coalitions:
        return np.zeros((0, k))
    width = max(1, (k + 7) // 8)
    packed = b"".join(c.to_bytes(width, "little") for c in coalitions)
    octets = np.frombuffer(packed, dtype=np.uint8).reshape(len(coalitions), width)
    return np.unpackbits(octets, axis=1, bitorder="little")[:, :k].astype(float)
