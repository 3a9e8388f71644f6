"""Sparse similarity between memories: only the pairs that share something are stored.

A :class:`SimilarityGraph` is a K x K similarity held as its non-zero off-diagonal entries
(compressed rows, and the same entries by column) and its diagonal; every pair not stored
is exactly 0. It is what :mod:`.grouping` works on: word similarity links only memories
that share a word, so a context of K memories costs the pairs that share words (the
products word by word) instead of a K x K matrix, and the grouping walks a memory's stored
neighbours instead of every other memory. :meth:`SimilarityGraph.dense` gives back the
K x K matrix, entry for entry the one a dense computation gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
else:
    from .lazy import np

__all__ = ["SimilarityGraph"]


def _compress(
    k: int, rows: np.ndarray, cols: np.ndarray, values: np.ndarray, *, ordered: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, indices, data) of the entries, rows in order, columns ascending per row.

    ``ordered``: the entries already come row by row, columns ascending (no sort).
    """
    if not ordered:
        order = np.argsort(_narrow(rows * max(k, 1) + cols, k * k), kind="stable")
        rows, cols, values = rows[order], cols[order], values[order]
    indptr = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=k), out=indptr[1:])
    return indptr, cols.astype(np.int64, copy=False), values.astype(float, copy=False)


@dataclass(frozen=True)
class SimilarityGraph:
    """A K x K similarity stored sparsely (pairs not stored are 0).

    Build one with :meth:`from_entries` or :meth:`from_dense`.
    """

    k: int
    """The number of memories."""
    diagonal: np.ndarray
    """Each memory's similarity to itself (1.0 for the package's similarities)."""
    indptr: np.ndarray
    """Row i's entries are ``indices[indptr[i]:indptr[i + 1]]`` (columns, ascending)."""
    indices: np.ndarray
    """The stored entries' columns."""
    data: np.ndarray
    """The stored entries' values."""
    t_indptr: np.ndarray
    """Column j's entries are ``t_indices[t_indptr[j]:t_indptr[j + 1]]`` (rows, ascending)."""
    t_indices: np.ndarray
    """The stored entries' rows, by column."""
    t_data: np.ndarray
    """The stored entries' values, by column."""

    def __post_init__(self) -> None:
        for array in (
            self.diagonal,
            self.indptr,
            self.indices,
            self.data,
            self.t_indptr,
            self.t_indices,
            self.t_data,
        ):
            array.flags.writeable = False  # shared between the stages of a run

    @classmethod
    def from_entries(
        cls,
        k: int,
        rows: np.ndarray,
        cols: np.ndarray,
        values: np.ndarray,
        diagonal: np.ndarray | None = None,
        *,
        ordered: bool = False,
    ) -> SimilarityGraph:
        """A graph of the given off-diagonal entries (each (row, column) at most once).

        Args:
            k: the number of memories.
            rows: the entries' rows.
            cols: the entries' columns (never equal to the row).
            values: the entries' values.
            diagonal: the diagonal (None: 1.0 everywhere).
            ordered: the entries come row by row, columns ascending (saves a sort).

        Returns:
            The graph.
        """
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.array(cols, dtype=np.int64)  # copies: the graph's arrays are read-only
        values = np.array(values, dtype=float)
        diag = np.ones(k) if diagonal is None else np.array(diagonal, dtype=float)
        indptr, indices, data = _compress(k, rows, cols, values, ordered=ordered)
        # by column: a stable sort of the row-major entries keeps rows ascending
        by_column = np.argsort(_narrow(indices, k), kind="stable")
        t_rows = np.repeat(np.arange(k), np.diff(indptr))[by_column]
        t_indptr, t_indices, t_data = _compress(
            k, indices[by_column], t_rows, data[by_column], ordered=True
        )
        return cls(k, diag, indptr, indices, data, t_indptr, t_indices, t_data)

    @classmethod
    def symmetric(
        cls,
        k: int,
        rows: np.ndarray,
        cols: np.ndarray,
        values: np.ndarray,
        mirrored: np.ndarray | None = None,
    ) -> SimilarityGraph:
        """The graph of upper-triangle entries and their mirrors (diagonal 1.0).

        The entries come row by row, columns ascending, every column above its row; each
        (row, column) is stored with its mirror (column, row), whose value is ``mirrored``
        (None: the same values; a computed cosine may differ in the last bit). The pattern
        is its own transpose: built with one stable sort of the entries by column.

        Args:
            k: the number of memories.
            rows: the entries' rows.
            cols: the entries' columns (each greater than its row).
            values: the entries' values.
            mirrored: the mirrors' values (None: ``values``).

        Returns:
            The graph.
        """
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        values = np.asarray(values, dtype=float)
        down = values if mirrored is None else np.asarray(mirrored, dtype=float)
        by_column = np.argsort(_narrow(cols, k), kind="stable")  # the mirrors, row by row
        upper = np.bincount(rows, minlength=k)
        lower = np.bincount(cols, minlength=k)
        indptr = np.zeros(k + 1, dtype=np.int64)
        np.cumsum(upper + lower, out=indptr[1:])
        # row r: its mirrored entries (columns below r) first, then its own (columns above)
        lower_rank = np.arange(len(cols)) - np.repeat(np.cumsum(lower) - lower, lower)
        upper_rank = np.arange(len(rows)) - np.repeat(np.cumsum(upper) - upper, upper)
        mirror_rows = cols[by_column]
        indices = np.empty(2 * len(rows), dtype=np.int64)
        data = np.empty(2 * len(rows))
        t_data = np.empty(2 * len(rows))
        at_lower = indptr[mirror_rows] + lower_rank
        at_upper = indptr[rows] + lower[rows] + upper_rank
        indices[at_lower], data[at_lower] = rows[by_column], down[by_column]
        indices[at_upper], data[at_upper] = cols, values
        t_data[at_lower], t_data[at_upper] = values[by_column], down
        return cls(k, np.ones(k), indptr, indices, data, indptr, indices, t_data)

    @classmethod
    def from_dense(cls, matrix: np.ndarray) -> SimilarityGraph:
        """The graph of a K x K matrix (its non-zero off-diagonal entries are stored).

        Args:
            matrix: the K x K similarity.

        Returns:
            The graph.
        """
        matrix = np.asarray(matrix, dtype=float)
        off = matrix.copy()
        np.fill_diagonal(off, 0.0)
        rows, cols = np.nonzero(off)
        return cls.from_entries(
            len(matrix), rows, cols, matrix[rows, cols], np.diag(matrix), ordered=True
        )

    @property
    def shape(self) -> tuple[int, int]:
        """(K, K)."""
        return (self.k, self.k)

    @property
    def stored(self) -> int:
        """The number of stored (non-zero off-diagonal) entries."""
        return len(self.data)

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Row i's stored entries: (columns ascending, values)."""
        a, b = self.indptr[i], self.indptr[i + 1]
        return self.indices[a:b], self.data[a:b]

    def column(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Column j's stored entries: (rows ascending, values)."""
        a, b = self.t_indptr[j], self.t_indptr[j + 1]
        return self.t_indices[a:b], self.t_data[a:b]

    def dense(self) -> np.ndarray:
        """The K x K matrix (pairs not stored are 0)."""
        out = np.zeros((self.k, self.k))
        rows = np.repeat(np.arange(self.k), np.diff(self.indptr))
        out[rows, self.indices] = self.data
        out[np.arange(self.k), np.arange(self.k)] = self.diagonal
        return out

    def restrict(self, positions: Sequence[int]) -> SimilarityGraph:
        """The similarity among ``positions`` (position n of the list becomes memory n).

        Args:
            positions: distinct memory positions.

        Returns:
            The graph of the sub-matrix.
        """
        chosen = np.asarray(list(positions), dtype=np.int64)
        local = np.full(self.k, -1, dtype=np.int64)
        local[chosen] = np.arange(len(chosen))
        if bool(np.all(np.diff(chosen) > 0)):  # sorted: rows and columns keep their order
            rows = _kept(self.indptr, self.indices, self.data, chosen, local)
            columns = _kept(self.t_indptr, self.t_indices, self.t_data, chosen, local)
            return SimilarityGraph(len(chosen), self.diagonal[chosen].copy(), *rows, *columns)
        counts = np.diff(self.indptr)[chosen]
        starts = self.indptr[chosen]
        take = np.repeat(starts - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(
            int(counts.sum())
        )
        entry_rows = np.repeat(np.arange(len(chosen)), counts)
        cols = local[self.indices[take]]
        keep = cols >= 0
        return SimilarityGraph.from_entries(
            len(chosen), entry_rows[keep], cols[keep], self.data[take][keep], self.diagonal[chosen]
        )


def _narrow(values: np.ndarray, bound: int) -> np.ndarray:
    """``values`` (all below ``bound``) in the narrowest integer type that holds them.

    Sorting 16-bit integers stably is a radix sort: far cheaper than a 64-bit merge sort.
    """
    if bound <= np.iinfo(np.int16).max:
        return values.astype(np.int16)
    if bound <= np.iinfo(np.int32).max:
        return values.astype(np.int32)
    return values


def _kept(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    chosen: np.ndarray,
    local: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The compressed rows ``chosen`` (ascending) with their entries among ``chosen``."""
    counts = np.diff(indptr)[chosen]
    starts = indptr[chosen]
    take = np.repeat(starts - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(
        int(counts.sum())
    )
    cols = local[indices[take]]
    keep = cols >= 0
    kept_counts = np.bincount(
        np.repeat(np.arange(len(chosen)), counts)[keep], minlength=len(chosen)
    )
    out = np.zeros(len(chosen) + 1, dtype=np.int64)
    np.cumsum(kept_counts, out=out[1:])
    return out, cols[keep], data[take][keep]
