"""What verified clearances established about each memory on its own.

A verified clearance removes a set C and shows that M minus C recovers: evidence against
the set. It is evidence against one member x only when x's own contribution was
established. With D = C minus {x} (the clearance with x put back), a run that recorded a
candidate clearing exactly D shows:

- *proven* (any run): D did not verifiably recover, so x's removal was needed. For a
  one-memory clearance D is C_0 (the failing full context); in a nested family (Eq. 17) it
  is the predecessor of the last member added; in a ledger-guided run it is the put-back
  test of ``core.prior``.
- *acquitted* (a ledger- or feedback-guided run): D verifiably recovered, so this query
  did not need x removed; x only rode along in the verified union. When several members
  recovered put back alone, each is acquitted only when the run also put them back
  *together* (C minus all of them) and that recovered: redundant copies of one harm each
  recover alone beside the evidence, and acquitting each by its own test would serve
  them all again (the answer would flap back). The carriers of the harm the run kept out
  are put back in that union too (a copy whose put-back recovered only because another
  copy stayed withheld is not acquitted). When that union test fails they are *proven*
  together (the group's removal was needed, no put-back of theirs is asked again); without
  it (a run recorded before it existed) none of them is acquitted.

A full run (Algorithm 1) also *attributes* every member it clears: its attribution singled
them out before the clearance verified.

The ledger asks the engine to put back the offered members never proven nor acquitted
(each is tested once). Review counts a question against x only when a run that did not
take x from the ledger (a full run's attribution, or a feedback replay) verified its harm
there (``scope_state``, ``review``): a memory that only rode along in guided unions, or was
carried by the ledger to other questions, earns no evidence. Only runs after the memory's
last restore count.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 17.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.engine import Connection

from . import schema as t

__all__ = [
    "GUIDED_MODES",
    "HarmFacts",
    "load_harm_facts",
    "proven_members",
    "split_members",
]

GUIDED_MODES = ("ledger_guided", "feedback_guided")
"""Run modes whose clearance is a verified prior candidate rather than an attribution."""
_CHUNK = 400

Key = tuple[str, str]
"""(memory id, content hash)."""


@dataclass(frozen=True, slots=True)
class HarmFacts:
    """The latest verified facts about one memory (id and text) since its last restore."""

    cleared_at: datetime | None = None
    """Latest verified clearance that removed it (any mode)."""
    proven_at: datetime | None = None
    """Latest verified run in which its own removal was shown necessary."""
    acquitted_at: datetime | None = None
    """Latest guided run whose put-back test showed its removal was not needed."""

    @property
    def tested(self) -> bool:
        """Its own contribution was tested (proven or acquitted): no put-back needed."""
        return self.proven_at is not None or self.acquitted_at is not None


def split_members(
    cleared: Iterable[str], candidates: Iterable[tuple[Sequence[str], bool]]
) -> tuple[set[str], set[str]]:
    """Split a verified clearance's members into proven ones and ones put back and recovered.

    For each member x of ``cleared``, the run's candidate that cleared exactly the others (x
    put back) decides: it did not recover, so x is proven; it recovered, so x was put back
    and the context recovered. A member without such a candidate is in neither set. The
    members that recovered alone count as put back only when, among the run's candidates
    that put all of them back and no proven member, the one clearing the fewest memories
    (the union test, which also puts back the carriers, ``core.stages.prior``) recovered
    too; when it failed they are proven together (module docstring).

    Args:
        cleared: The run's cleared memory ids.
        candidates: The run's candidates as (memory ids, recovered) pairs.

    Returns:
        (proven, put back and recovered).
    """
    removed = set(cleared)
    verdicts = {frozenset(ids): recovered for ids, recovered in candidates}
    proven, recovered = set(), set()
    for x in removed:
        verdict = verdicts.get(frozenset(removed - {x}))
        if verdict is False:
            proven.add(x)
        elif verdict is True:
            recovered.add(x)
    if not recovered:
        return proven, recovered
    # they count as put back only if the test that put back the most with them (and no
    # proven member) recovered: the candidate clearing the fewest others (all of C put back
    # is the full context, and an acquittal by the full context alone is none)
    rest = removed - recovered
    tests = [ids for ids in verdicts if ids and proven <= ids <= rest]
    if not tests:
        return proven, set()
    if not verdicts[min(tests, key=len)]:
        return proven | recovered, set()  # put back together they fail: proven jointly
    return proven, recovered


def proven_members(
    cleared: Iterable[str], candidates: Iterable[tuple[Sequence[str], bool]]
) -> set[str]:
    """Members of ``cleared`` whose removal the run showed necessary (``split_members``).

    Args:
        cleared: The run's cleared memory ids.
        candidates: The run's candidates as (memory ids, recovered) pairs.

    Returns:
        The proven members.
    """
    return split_members(cleared, candidates)[0]


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _chunks(items: Sequence[object]) -> Iterable[Sequence[object]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _latest(current: datetime | None, at: datetime) -> datetime:
    return at if current is None or at > current else current


def load_harm_facts(
    conn: Connection,
    namespace: str,
    ids: Sequence[str] | None,
    restored: dict[str, datetime],
) -> dict[Key, HarmFacts]:
    """:class:`HarmFacts` of ``ids`` (None: every memory) from verified runs.

    Only runs recorded after each memory's last restore count (``restored``: memory id ->
    time).

    Args:
        conn: A connection in a read transaction.
        namespace: The ledger's namespace.
        ids: The memory ids (None: every memory).
        restored: Memory id -> time of its last restore.

    Returns:
        (memory id, content hash) -> facts.
    """
    r, m, c = t.runs, t.run_memories, t.candidates
    cleared_rows = (
        select(m.c.run_pk, m.c.memory_id, m.c.content_hash, r.c.created_at, r.c.mode)
        .join(r, m.c.run_pk == r.c.id)
        .where(
            r.c.namespace == namespace,
            r.c.status == "complete",
            r.c.recovered.is_(True),
            m.c.namespace == namespace,
            m.c.cleared.is_(True),
        )
    )
    rows: list[tuple[int, str, str, datetime, str]] = []
    if ids is None:
        rows = [tuple(x) for x in conn.execute(cleared_rows)]
    else:
        other = m.alias("named")
        for chunk in _chunks(list(ids)):
            runs_clearing = select(other.c.run_pk).where(
                other.c.namespace == namespace,
                other.c.memory_id.in_(chunk),
                other.c.cleared.is_(True),
            )
            selected = conn.execute(cleared_rows.where(m.c.run_pk.in_(runs_clearing)))
            rows += [tuple(x) for x in selected]
    members: dict[int, set[str]] = {}
    for run_pk, memory_id, *_ in rows:
        members.setdefault(run_pk, set()).add(memory_id)
    tried: dict[int, list[tuple[Sequence[str], bool]]] = {}
    for chunk in _chunks(sorted(members)):
        query = select(c.c.run_pk, c.c.memory_ids, c.c.recovered).where(c.c.run_pk.in_(chunk))
        for run_pk, memory_ids, recovered in conn.execute(query):
            tried.setdefault(run_pk, []).append((list(memory_ids or []), bool(recovered)))
    verdicts = {pk: split_members(ids_, tried.get(pk, ())) for pk, ids_ in members.items()}
    wanted = None if ids is None else set(ids)
    facts: dict[Key, dict[str, datetime]] = {}
    for run_pk, memory_id, digest, created, mode in rows:
        at = _utc(created)
        since = restored.get(memory_id)
        if (wanted is not None and memory_id not in wanted) or (since is not None and at <= since):
            continue
        entry = facts.setdefault((memory_id, digest), {})
        entry["cleared_at"] = _latest(entry.get("cleared_at"), at)
        proven, put_back = verdicts[run_pk]
        if memory_id in proven:
            entry["proven_at"] = _latest(entry.get("proven_at"), at)
        elif memory_id in put_back and mode in GUIDED_MODES:
            entry["acquitted_at"] = _latest(entry.get("acquitted_at"), at)
    return {key: HarmFacts(**values) for key, values in facts.items()}
