"""The recency candidate: the older of similar dated memories, tried first and verified.

A memory is m_i = (x_i, xi_i): its text and its auxiliary information, e.g. a timestamp
(MeClear, Sec. 3). When two memories are about the same thing and dated differently, the
older one may be out of date. Given a :class:`RecencyPrior`
(``MeClearEngine(config, recency=RecencyPrior())``) the engine forms one *recency candidate*
C_r: the dated memories are grouped by similarity (two memories whose similarity is at
least ``min_similarity`` share a group, and so do their groups: TF-IDF word vectors over
the context, or the caller's embeddings, :func:`~.grouping.memory_graph`: the sparse graph
the hierarchical grouping uses, no K x K matrix), and every
member older than its group's newest member is in C_r. The newest memories of a group are
never in it.

C_r is only an ordering prior, never a verdict. It is tried after screening (the full
context failed its exit test, and a caller's prior candidate, if any, did not verify) and
verified like any other candidate (Eq. 18-19, the configuration's verification rule):
M minus C_r must pass the recovery test and gain over v(M). When it is admissible it is
the clearance and attribution is skipped (``report.clearance_search == "recency"``);
otherwise Algorithm 1 runs as usual on the same coalition cache, so the attempt costs at
most the candidate's verification trials. A newest memory that is wrong (a later false
"correction") puts the right, older statement into C_r; M minus C_r then answers wrongly,
fails verification, and attribution finds the wrong newest memory like any harmful one:
nothing is kept because it is newer.

Dates are read from ``metadata[key]``: a ``datetime`` or ``date``, or an ISO 8601 string
(a zone is converted to UTC). A memory without a readable date is never in C_r and never
makes another memory older. Dates are hostile input: an unreadable one, one out of range
(``0001-01-01T00:00:00+14:00`` is before year 1 in UTC) or one later than the run's now plus
``RecencyPrior.future_grace_seconds`` (``9999-12-31``) is ignored for recency, never
raised; the engine counts them (``ClearanceReport.recency_ignored``) and logs one WARNING
per run. A memory is only out of date against a newer memory that *says something else*:
a newer copy of its own text (the same words, case and punctuation aside) never puts it in
C_r, so a copy dated later cannot get the memory it copies cleared. Similarity decides only
which memories are compared, so a memory whose text or date imitates another one can
change what is tried, never what is verified.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Sec. 3 (m_i = (x_i, xi_i)),
    Eq. 18-19.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    import numpy as np
else:
    from .lazy import np
from pydantic import BaseModel, ConfigDict, Field

from .memory import Memory
from .similarity_graph import SimilarityGraph

Similarity = Union["np.ndarray", SimilarityGraph]
"""A K x K similarity, dense or sparse (the same alias as ``core.grouping``'s)."""

__all__ = [
    "RecencyPrior",
    "dated_count",
    "ignored_dates",
    "link_strength",
    "memory_time",
    "recency_positions",
]


class RecencyPrior(BaseModel):
    """The recency candidate's settings (module docstring); off unless configured."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str = Field(default="date", min_length=1)
    """The metadata key holding a memory's date (LlamaIndex's default ``date_key``)."""
    min_similarity: float = Field(default=0.3, ge=0.0, le=1.0)
    """Two memories are compared by date when their similarity is at least this."""
    recovery_rate: float | None = Field(default=None, gt=0.0, le=1.0)
    """Pass rate M minus C_r must verifiably reach under the sequential rule (None: the
    run's ``Verification.recovery_rate``). C_r has no attribution behind it, so a higher bar
    (e.g. the early exit's ``exit_rate``) guards against a lucky pass of a wrong candidate
    (the right statement older than a wrong "correction") under a noisy judge."""
    shrink: bool = False
    """Once C_r verifies, put each member back in turn (the most weakly linked first: the
    lowest similarity to a newer memory) and keep it out only when the context without
    the others still verifies (Eq. 18-19): a background memory that merely resembles a
    newer one stays. One verification per member of a C_r of two or more."""
    future_grace_seconds: float = Field(default=86_400.0, ge=0.0, le=366 * 86_400.0)
    """A date later than the run's now (UTC) by more than this is ignored for recency
    (clock differences and zones aside, a memory cannot come from the future)."""

    def latest(self, now: datetime | None = None) -> datetime:
        """The latest usable date: ``now`` (default: the current UTC time) plus the grace.

        Args:
            now: The run's now (naive UTC, or aware).

        Returns:
            A naive UTC ``datetime``.
        """
        current = now or datetime.now(UTC)
        if current.tzinfo is not None:
            current = current.astimezone(UTC).replace(tzinfo=None)
        return current + timedelta(seconds=self.future_grace_seconds)


def memory_time(
    metadata: Mapping[str, Any], key: str = "date", *, latest: datetime | None = None
) -> datetime | None:
    """The date of a memory from its metadata, or None when absent or unusable.

    Never raises: an unreadable value, a date out of ``datetime``'s range once converted
    to UTC, or one after ``latest`` gives None.

    Args:
        metadata: the memory's metadata.
        key: the metadata key.
        latest: the latest usable date (naive UTC; None: no bound).

    Returns:
        The date as a naive UTC ``datetime`` (a ``date`` at midnight), or None.

    Example:
        >>> memory_time({"date": "2024-05-01"})
        datetime.datetime(2024, 5, 1, 0, 0)
        >>> memory_time({"date": "yesterday"}) is None
        True
        >>> memory_time({"date": "0001-01-01T00:00:00+14:00"}) is None
        True
    """
    try:
        value = metadata.get(key)
        if isinstance(value, str):
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        if isinstance(value, datetime):
            if value.tzinfo is not None:
                value = value.astimezone(UTC).replace(tzinfo=None)
            when = value
        elif isinstance(value, date):
            when = datetime(value.year, value.month, value.day)
        else:
            return None
    except (ValueError, OverflowError, TypeError, AttributeError):
        return None
    if latest is not None and when > latest:
        return None
    return when


def ignored_dates(
    context: Sequence[Memory], key: str = "date", *, latest: datetime | None = None
) -> list[str]:
    """The memories whose date is present but unusable (unreadable, out of range, future).

    Args:
        context: the frozen context.
        key: the metadata key holding the date.
        latest: the latest usable date (naive UTC; None: no bound).

    Returns:
        Their ids, in context order.
    """
    return [
        m.id
        for m in context
        if m.metadata.get(key) not in (None, "")
        and memory_time(m.metadata, key, latest=latest) is None
    ]


def _said(text: str) -> str:
    """What a memory says, for telling copies apart: its words, case-folded."""
    return " ".join(re.findall(r"\w+", text.casefold()))


def _linked_groups(
    graph: SimilarityGraph, dated: Sequence[int], min_similarity: float
) -> dict[int, int]:
    """Each dated position's group root: dated memories linked at ``min_similarity`` or more.

    Union-find over the stored pairs of the sparse similarity (a pair not stored is 0, so
    it links only when ``min_similarity`` is 0: then the groups are the components of the
    complement of the stored pairs below 0, walked without forming every pair).
    """
    group = {i: i for i in dated}

    def root(i: int) -> int:
        while group[i] != i:
            group[i] = group[group[i]]
            i = group[i]
        return i

    is_dated = np.zeros(graph.k, dtype=bool)
    is_dated[list(dated)] = True
    if min_similarity > 0.0:
        rows = np.repeat(np.arange(graph.k), np.diff(graph.indptr))
        keep = (graph.data >= min_similarity) & (rows < graph.indices)
        keep &= is_dated[rows] & is_dated[graph.indices]
        for i, j in zip(rows[keep].tolist(), graph.indices[keep].tolist(), strict=True):
            group[root(i)] = root(j)
        return {i: root(i) for i in dated}
    # every pair links except a stored one below 0: breadth-first over the complement
    unvisited = set(dated)
    while unvisited:
        start = min(unvisited)
        unvisited.discard(start)
        frontier = [start]
        while frontier:
            i = frontier.pop()
            cols, values = graph.row(i)
            apart = set(cols[values < 0.0].tolist())
            joined = [j for j in unvisited if j not in apart]
            for j in joined:
                unvisited.discard(j)
                group[j] = start
            frontier.extend(joined)
    return {i: root(i) for i in dated}


def recency_positions(
    context: Sequence[Memory],
    similarity: Similarity,
    *,
    key: str = "date",
    min_similarity: float = 0.3,
    latest: datetime | None = None,
) -> list[int]:
    """The recency candidate C_r: dated memories older than a newer one that says otherwise.

    A dated memory is in C_r when its similarity group holds a newer memory whose text is
    not the same as its own (a newer copy of a memory never makes it out of date). The
    groups are read from the stored pairs of a sparse similarity (the graph grouping
    builds, :func:`~.grouping.memory_graph`): no K x K matrix is formed.

    Args:
        context: the frozen context.
        similarity: the K x K similarity, dense or a
            :class:`~.similarity_graph.SimilarityGraph` (:func:`~.grouping.memory_graph`).
        key: the metadata key holding the date.
        min_similarity: the similarity from which two memories are compared.
        latest: the latest usable date (later ones are ignored; None: no bound).

    Returns:
        The positions of C_r, oldest first (retrieval order among equal dates); empty when
        fewer than two memories are dated.

    Raises:
        ValueError: ``similarity`` is not K x K.

    Example:
        >>> import numpy as np
        >>> from meclear_integrations.core.memory import Memory
        >>> ctx = [Memory(id="old", content="x", metadata={"date": "2020-01-01"}),
        ...        Memory(id="new", content="y", metadata={"date": "2024-01-01"})]
        >>> recency_positions(ctx, np.ones((2, 2)))
        [0]
    """
    k = len(context)
    graph = _graph(similarity, k)
    times = [memory_time(m.metadata, key, latest=latest) for m in context]
    dated = [i for i, when in enumerate(times) if when is not None]
    if len(dated) < 2:
        return []
    roots = _linked_groups(graph, dated, min_similarity)
    members: dict[int, list[int]] = {}
    for i in dated:
        members.setdefault(roots[i], []).append(i)
    older: list[int] = []
    for group in members.values():
        if len(group) < 2:
            continue
        said = {i: _said(context[i].content) for i in group}
        # per distinct text: its newest date; a memory is older when another text is newer
        newest: dict[str, datetime] = {}
        for i in group:
            when = times[i]
            assert when is not None
            if said[i] not in newest or when > newest[said[i]]:
                newest[said[i]] = when
        ranked = sorted(newest.items(), key=lambda item: item[1], reverse=True)
        for i in group:
            when = times[i]
            assert when is not None
            other = next((t for text, t in ranked if text != said[i]), None)
            if other is not None and other > when:
                older.append(i)
    return sorted(older, key=lambda i: (times[i] or datetime.min, i))


def dated_count(
    context: Sequence[Memory], key: str = "date", *, latest: datetime | None = None
) -> int:
    """How many memories of the context carry a usable date.

    Args:
        context: the frozen context.
        key: the metadata key holding the date.
        latest: the latest usable date (naive UTC; None: no bound).

    Returns:
        The count.
    """
    return sum(memory_time(m.metadata, key, latest=latest) is not None for m in context)


def link_strength(
    context: Sequence[Memory],
    similarity: Similarity,
    position: int,
    key: str = "date",
    *,
    latest: datetime | None = None,
) -> float:
    """The highest similarity of a memory to a newer dated memory (0.0: none).

    Reads the memory's stored pairs of a sparse similarity (a pair not stored is 0).

    Args:
        context: the frozen context.
        similarity: the K x K similarity, dense or a
            :class:`~.similarity_graph.SimilarityGraph`.
        position: the memory's position.
        key: the metadata key holding the date.
        latest: the latest usable date (naive UTC; None: no bound).

    Returns:
        The similarity.
    """
    when = memory_time(context[position].metadata, key, latest=latest)
    if when is None:
        return 0.0
    graph = _graph(similarity, len(context))
    cols, values = graph.row(position)
    stored = dict(zip(cols.tolist(), values.tolist(), strict=True))
    links = [
        stored.get(j, 0.0)
        for j, m in enumerate(context)
        if j != position
        and (later := memory_time(m.metadata, key, latest=latest)) is not None
        and later > when
    ]
    return max(links, default=0.0)


def _graph(similarity: Similarity, k: int) -> SimilarityGraph:
    """``similarity`` as a sparse graph, checked to be K x K."""
    shape = similarity.shape
    if shape != (k, k):
        raise ValueError(f"similarity is {shape}, expected ({k}, {k})")
    if isinstance(similarity, SimilarityGraph):
        return similarity
    return SimilarityGraph.from_dense(np.asarray(similarity, dtype=float))
