"""The empirical cooperative game v^(S) over a frozen context (Eq. 2), and its coalitions.

A coalition S is a bitmask over the frozen context (bit i = memory m_i present):
:data:`Coalition` and its helpers (:func:`full`, :func:`without`, :func:`from_positions`,
:func:`members`, :func:`size`, :func:`membership_matrix`).

The game owns the value cache keyed by memory identity: a (coalition, trial) pair is
evaluated at most once per run, v^(S) is the mean of the trials the coalition has (T, or
fewer under adaptive trials), and every trial score is kept for the recovery predicate.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 2.
"""

from __future__ import annotations

import math
import numbers
import reprlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import ScoreOutOfRangeError
from .memory import Memory

if TYPE_CHECKING:
    import numpy as np
else:
    from .lazy import np

__all__ = [
    "Coalition",
    "CoalitionGame",
    "EvaluationRequest",
    "from_positions",
    "full",
    "members",
    "membership_matrix",
    "size",
    "without",
]


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


@dataclass(frozen=True, slots=True)
class EvaluationRequest:
    """One evaluator call: a coalition (its memories in retrieval order) and a trial."""

    coalition: Coalition
    memories: tuple[Memory, ...]
    trial: int

    @property
    def memory_ids(self) -> tuple[str, ...]:
        """The ids of the coalition's memories."""
        return tuple(m.id for m in self.memories)


def _shown(score: object) -> str:
    """A short, safe rendering of a rejected score (a 400-digit int, a long string)."""
    try:
        return f"{type(score).__name__} {reprlib.repr(score)}"
    except Exception:  # a score whose repr() fails
        return type(score).__name__


_TABLE_K = 64
"""Contexts up to this many memories read coalitions through byte lookup tables; wider ones
through a numpy mask (cheaper once a coalition spans many bytes, and never a table to fill)."""


def _chunk_tables(context: tuple[Memory, ...]) -> list[dict[int, tuple[Memory, ...]]]:
    """For each block of 8 positions, a lazily filled map byte value -> memories present."""
    return [{} for _ in range(0, len(context), 8)]


@dataclass(slots=True)
class CoalitionGame:
    """Cache of v^(S) for one frozen context; counts what evaluation cost."""

    context: tuple[Memory, ...]
    trials: int
    scores: dict[Coalition, tuple[float, ...]] = field(default_factory=dict)
    answers: dict[Coalition, tuple[str | None, ...]] = field(default_factory=dict)
    """The agent's answer behind each trial score, when the evaluator reported it
    (``core.answers``; None for a trial without one)."""
    same: Callable[[str, str], bool] | None = None
    """The answer equivalence the evaluator reported with its answers (None: none yet)."""
    cache_hits: int = 0
    evaluator_calls: int = 0
    rounds: int = 0
    _chunks: list[dict[int, tuple[Memory, ...]]] = field(default_factory=list, repr=False)
    _objects: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def k(self) -> int:
        """K, the number of memories in the frozen context."""
        return len(self.context)

    @property
    def full(self) -> Coalition:
        """The full context M as a coalition."""
        return full(self.k)

    def memories_of(self, coalition: Coalition) -> tuple[Memory, ...]:
        """The memories of ``coalition`` in retrieval order.

        Never walks the coalition bit by bit (clearing one bit of a K-bit integer rewrites
        it: quadratic in K). Up to K = 64 the coalition is read byte by byte through a
        lookup table per block of 8 positions, filled as byte values occur; above, its
        bytes are unpacked into a mask over the context (one numpy selection). The full
        context is the context itself. Bits at positions K and above are ignored.

        Args:
            coalition: a coalition.

        Returns:
            Its memories.
        """
        context = self.context
        k = len(context)
        if coalition == (1 << k) - 1:
            return tuple(context)
        if coalition < 0 or coalition.bit_length() > k:
            coalition &= (1 << k) - 1
        width = (k + 7) // 8
        octets = coalition.to_bytes(width, "little")
        if k > _TABLE_K:
            if self._objects is None:
                self._objects = np.fromiter(context, dtype=object, count=k)  # as objects
            mask = np.unpackbits(np.frombuffer(octets, dtype=np.uint8), bitorder="little")
            return tuple(self._objects[mask[:k].view(bool)].tolist())
        if not self._chunks:
            self._chunks = _chunk_tables(context)
        chunks = self._chunks
        out: list[Memory] = []
        for start, byte in enumerate(octets):
            if byte:
                table = chunks[start]
                present = table.get(byte)
                if present is None:
                    block = context[8 * start : 8 * start + 8]
                    present = table[byte] = tuple(block[i] for i in _BYTE_POSITIONS[byte])
                out.extend(present)
        return tuple(out)

    def trials_of(self, coalition: Coalition) -> int:
        """How many trials of ``coalition`` are cached.

        Args:
            coalition: a coalition.

        Returns:
            Its trials so far.
        """
        return len(self.scores.get(coalition, ()))

    def pending(
        self,
        coalitions: Iterable[Coalition] | Iterable[tuple[Coalition, int]],
        trials: int | None = None,
    ) -> list[EvaluationRequest]:
        """Evaluator calls still needed to bring each coalition to ``trials``.

        Evaluator calls still needed so that each coalition has ``trials`` trials (T by
        default; ``(coalition, trials)`` pairs give each coalition its own count, the
        largest one wins), deduplicated in first-seen order. Every requested occurrence
        that needs no new call is a cache hit.

        Args:
            coalitions: coalitions, or (coalition, trials) pairs.
            trials: trials each needs (None: T, or the pair's).

        Returns:
            One request per missing trial.
        """
        default = self.trials if trials is None else trials
        want: dict[Coalition, int] = {}
        occurrences = 0
        for item in coalitions:
            coalition, n = item if isinstance(item, tuple) else (item, default)
            occurrences += 1
            if want.get(coalition, 0) < n:
                want[coalition] = n
        todo: list[EvaluationRequest] = []
        scores = self.scores
        fresh = 0
        for coalition, n in want.items():
            have = len(scores.get(coalition, ()))
            if have >= n:
                continue
            fresh += 1
            memories = self.memories_of(coalition)
            todo.extend(EvaluationRequest(coalition, memories, t) for t in range(have, n))
        self.cache_hits += occurrences - fresh
        return todo

    def missing(self, coalitions: Iterable[Coalition]) -> list[Coalition]:
        """Coalitions not cached yet, deduplicated, in first-seen order; counts cache hits.

        Args:
            coalitions: coalitions.

        Returns:
            Those with no trial yet.
        """
        seen: set[Coalition] = set()
        todo: list[Coalition] = []
        for coalition in coalitions:
            if coalition in self.scores or coalition in seen:
                self.cache_hits += 1
                continue
            seen.add(coalition)
            todo.append(coalition)
        return todo

    def requests(self, coalitions: Sequence[Coalition]) -> list[EvaluationRequest]:
        """The evaluator calls needed for ``coalitions`` (T per coalition).

        Args:
            coalitions: coalitions.

        Returns:
            T requests (trials 0..T-1) for each coalition.
        """
        return [
            EvaluationRequest(c, self.memories_of(c), trial)
            for c in coalitions
            for trial in range(self.trials)
        ]

    def record(self, request: EvaluationRequest, score: object) -> float:
        """Validate one evaluator score; returns it as a float in [0, 1].

        Only a real number (``int``, ``float``, a numpy scalar, any ``numbers.Real``; never
        a bool or a string) that is finite and in [0, 1] is accepted; anything else,
        including a number too large for a float (``10**400``), raises
        :class:`ScoreOutOfRangeError` (an evaluator failure: the run fails open or closed).

        Args:
            request: the evaluated request.
            score: what the evaluator returned.

        Returns:
            The validated score.

        Raises:
            ScoreOutOfRangeError: not a finite number in [0, 1].
        """
        self.evaluator_calls += 1
        value = math.nan
        if isinstance(score, numbers.Real) and not isinstance(score, bool):
            try:
                value = float(score)
            except (TypeError, ValueError, OverflowError):
                value = math.nan
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ScoreOutOfRangeError(
                f"evaluator returned {_shown(score)} for coalition {list(request.memory_ids)} "
                f"(trial {request.trial}); scores must be numbers in [0, 1] (finite reals)",
                coalition=request.memory_ids,
                trial=request.trial,
            )
        return value

    def store(
        self,
        coalition: Coalition,
        trial_scores: Sequence[float],
        trial_answers: Sequence[str | None] | None = None,
    ) -> None:
        """Append ``trial_scores`` (the next trials, in order) to the coalition's scores.

        Args:
            coalition: a coalition.
            trial_scores: its new trials' scores.
            trial_answers: the answers behind them, when reported (None: none).
        """
        had = len(self.scores.get(coalition, ()))
        self.scores[coalition] = self.scores.get(coalition, ()) + tuple(trial_scores)
        answers = tuple(trial_answers) if trial_answers is not None else ()
        answers += (None,) * (len(trial_scores) - len(answers))
        known = self.answers.get(coalition, ())
        self.answers[coalition] = known + (None,) * (had - len(known)) + answers

    def answers_of(self, coalition: Coalition) -> tuple[str | None, ...]:
        """The answers behind the coalition's trials (None where not reported).

        Args:
            coalition: a coalition.

        Returns:
            One entry per trial, in trial order (empty when never evaluated).
        """
        return self.answers.get(coalition, ())

    def value(self, coalition: Coalition) -> float:
        """v^(S): the mean of the coalition's trial scores.

        Args:
            coalition: an evaluated coalition.

        Returns:
            v(S), the mean of its trials.
        """
        trial_scores = self.scores[coalition]
        return sum(trial_scores) / len(trial_scores)

    def recovers(self, coalition: Coalition, threshold: float) -> bool:
        """nu(S) = 1: every trial of the coalition scores at least ``threshold``.

        Args:
            coalition: an evaluated coalition.
            threshold: the score a trial must reach.

        Returns:
            True when every trial reaches it.
        """
        return all(s >= threshold for s in self.scores[coalition])

    @property
    def coalitions_evaluated(self) -> int:
        """Distinct coalitions with at least one trial."""
        return len(self.scores)
