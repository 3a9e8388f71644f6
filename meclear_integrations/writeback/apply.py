"""Accepted reviews applied to the memory store as soft deletes, and restores.

:func:`apply_reviews` takes every pending accepted decision (``ledger.tombstones``) and,
per memory:

1. a memory with an open tombstone is left alone (``already_retired``: applying a review
   twice changes nothing);
2. a memory the store no longer has is recorded as ``missing`` (deleted upstream: nothing
   removed, nothing lost, the decision settled);
3. a memory whose stored text no longer has the reviewed content hash is left alone
   (``changed``: it was edited since the review; review it again);
4. otherwise its exact encoding is written to a ``retired`` tombstone *first*, then the
   memory is removed from the store and the removal checked (the store no longer returns
   it); a store that refuses closes the tombstone as ``failed`` and the memory stays.

:func:`restore_memory` puts a retired memory back from its tombstone under its id, checks
it is there, closes the tombstone (``restored``) and records a ledger restore (so review
does not propose it again until new verified evidence). Nothing is ever hard-deleted
without a tombstone that holds it.

Each operation is one plan (a generator of store and ledger steps) run by the sync or the
async driver of ``core.concurrency.step_driver``, so ``apply_reviews`` / ``aapply_reviews``
and ``restore_memory`` / ``arestore_memory`` take the same steps: a store step calls the
adapter's sync method or awaits its async twin, a ledger step runs in a worker thread on
the async path. A store's error is thrown back into the plan, which decides; a ledger
error ends the operation.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..core.concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..core.errors import ConfigurationError
from ..ledger.tombstones import (
    ReviewDecision,
    Tombstone,
    active_tombstone,
    open_tombstones,
    pending_decisions,
    record_decision,
    record_event,
)
from ..runtime.hashing import content_hash
from .base import StoreAdapter, StoredMemory, exact_json
from .stores import adapter_for

__all__ = [
    "Action",
    "WritebackOutcome",
    "aapply_reviews",
    "accept_review",
    "apply_reviews",
    "arestore_memory",
    "reject_review",
    "restore_memory",
]

Action = Literal[
    "retired",
    "would_retire",
    "already_retired",
    "missing",
    "would_record_missing",
    "changed",
    "not_retired",
    "failed",
    "not_accepted",
    "restored",
    "would_restore",
    "not_in_tombstone",
    "conflict",
]
"""What a write-back did (or would do) to one memory."""


class WritebackOutcome(BaseModel):
    """What happened to one memory."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_id: str
    """The memory's id in your store."""
    action: Action
    """What was done (or, in a dry run, would be)."""
    message: str
    """One line for a person."""
    tombstone_id: str | None = None
    """The tombstone involved."""
    decision_id: str | None = None
    """The accepted decision applied."""

    @property
    def changed(self) -> bool:
        """The store was changed (a memory retired or restored)."""
        return self.action in ("retired", "restored")


# --------------------------------------------------------------------------- decisions
def accept_review(
    ledger: Any,
    memory_id: str,
    *,
    actor: str | None = None,
    reason: str | None = None,
    source: str = "python",
    source_id: str | None = None,
    content_hash: str | None = None,
    require_proposal: bool = True,
    min_queries: int = 2,
) -> ReviewDecision:
    """Record that a person accepts ``memory_id``'s review proposal (retire it).

    The evidence (content hash, runs, questions) is taken from the ledger's current
    proposal for the memory.

    Args:
        ledger: The ``HarmLedger``.
        memory_id: The memory's id in your store.
        actor: Who accepts.
        reason: Why.
        source: Where (``python``, ``cli``, ``langsmith``, ``phoenix``, ``langfuse``).
        source_id: The annotation's id there (the same one recorded twice is a no-op).
        content_hash: The text reviewed, when there is no proposal to take it from.
        require_proposal: Refuse a memory that is not among the current proposals.
        min_queries: The proposals' ``min_queries`` (as ``meclear ledger review``).

    Returns:
        The decision as recorded.

    Raises:
        ConfigurationError: ``require_proposal`` and the memory is not proposed.
    """
    proposal = next(
        (
            p
            for p in ledger.review(min_queries=min_queries, include_retired=True)
            if p.memory_id == memory_id
        ),
        None,
    )
    if proposal is None and require_proposal:
        raise ConfigurationError(
            f"memory {memory_id!r} is not among the review proposals "
            f"(min_queries={min_queries}); nothing recorded"
        )
    return record_decision(
        ledger,
        memory_id,
        decision="accepted",
        source=source,
        actor=actor,
        reason=reason,
        source_id=source_id,
        content_hash=proposal.content_hash if proposal is not None else content_hash,
        run_ids=proposal.run_ids if proposal is not None else (),
        query_ids=proposal.query_ids if proposal is not None else (),
    )


def reject_review(
    ledger: Any,
    memory_id: str,
    *,
    actor: str | None = None,
    reason: str | None = None,
    source: str = "python",
    source_id: str | None = None,
) -> ReviewDecision:
    """Record that a person rejects ``memory_id``'s proposal (a pending acceptance lapses).

    Args:
        ledger: The ``HarmLedger``.
        memory_id: The memory's id in your store.
        actor: Who rejects.
        reason: Why.
        source: Where.
        source_id: The annotation's id there.

    Returns:
        The decision as recorded.
    """
    return record_decision(
        ledger,
        memory_id,
        decision="rejected",
        source=source,
        actor=actor,
        reason=reason,
        source_id=source_id,
    )


# --------------------------------------------------------------------------- plans
_Plan = Steps[WritebackOutcome]


def _ledger(fn: Callable[[], Any]) -> Call:
    """A ledger step: blocking database work (a worker thread on the async path)."""
    return Call(fn)


def _fetch(adapter: StoreAdapter, memory_id: str) -> Call:
    return Call(lambda: adapter.fetch(memory_id), lambda: adapter.afetch(memory_id))


def _remove(adapter: StoreAdapter, memory_id: str) -> Call:
    return Call(lambda: adapter.remove(memory_id), lambda: adapter.aremove(memory_id))


def _put_back(adapter: StoreAdapter, payload: dict[str, Any]) -> Call:
    return Call(lambda: adapter.put_back(payload), lambda: adapter.aput_back(payload))


def _when(event: Tombstone) -> str:
    by = f" by {event.actor}" if event.actor else ""
    return f"{event.created_at.isoformat(timespec='seconds')}{by}"


def _retire_plan(
    ledger: Any,
    adapter: StoreAdapter,
    decision: ReviewDecision,
    *,
    actor: str | None,
    dry_run: bool,
) -> _Plan:
    mid, did = decision.memory_id, decision.decision_id
    active = yield _ledger(lambda: active_tombstone(ledger, mid))
    if active is not None:
        return WritebackOutcome(
            memory_id=mid,
            action="already_retired",
            tombstone_id=active.tombstone_id,
            decision_id=did,
            message=(
                f"{mid}: already retired (tombstone {active.tombstone_id[:8]}, "
                f"{_when(active)}); nothing changed"
            ),
        )
    stored: StoredMemory | None = yield _fetch(adapter, mid)
    common: dict[str, Any] = {
        "memory_id": mid,
        "store": adapter.label,
        "decision_id": did,
        "run_ids": decision.run_ids,
    }
    if stored is None:
        if dry_run:
            return WritebackOutcome(
                memory_id=mid,
                action="would_record_missing",
                decision_id=did,
                message=f"{mid}: not in the store (deleted upstream?); would record it as gone",
            )
        event = yield _ledger(
            lambda: record_event(
                ledger,
                event="missing",
                actor=actor,
                reason=decision.reason,
                content_hash=decision.content_hash,
                detail="the store has no memory with this id",
                **common,
            )
        )
        return WritebackOutcome(
            memory_id=mid,
            action="missing",
            tombstone_id=event.tombstone_id,
            decision_id=did,
            message=(
                f"{mid}: not in the store (already deleted upstream): nothing removed, "
                "nothing lost; the decision is settled"
            ),
        )
    digest = content_hash(stored.text)
    if decision.content_hash is not None and digest != decision.content_hash:
        return WritebackOutcome(
            memory_id=mid,
            action="changed",
            decision_id=did,
            message=(
                f"{mid}: its text changed since the review (hash {digest[:12]}, reviewed "
                f"{decision.content_hash[:12]}): not retired; review it again"
            ),
        )
    try:
        payload = exact_json(stored.payload, f"memory {mid!r}")
    except ConfigurationError as exc:
        return WritebackOutcome(
            memory_id=mid, action="not_retired", decision_id=did, message=f"{mid}: {exc}"
        )
    if dry_run:
        return WritebackOutcome(
            memory_id=mid,
            action="would_retire",
            decision_id=did,
            message=f"{mid}: would be retired (accepted by {decision.actor or '-'})",
        )
    tomb: Tombstone = yield _ledger(
        lambda: record_event(
            ledger,
            event="retired",
            actor=actor,
            reason=decision.reason,
            content_hash=digest,
            payload=payload,
            **common,
        )
    )
    problem: str | None = None
    try:
        yield _remove(adapter, mid)
        if (yield _fetch(adapter, mid)) is not None:
            problem = "the store still returns it after the removal"
    except Exception as exc:  # the store's own error, reported and recorded
        problem = f"the store refused the removal: {type(exc).__name__}: {exc}"
    if problem is not None:
        yield _ledger(
            lambda: record_event(
                ledger,
                event="failed",
                tombstone_id=tomb.tombstone_id,
                actor=actor,
                content_hash=digest,
                detail=problem,
                **common,
            )
        )
        return WritebackOutcome(
            memory_id=mid,
            action="failed",
            tombstone_id=tomb.tombstone_id,
            decision_id=did,
            message=f"{mid}: not retired, {problem}; it is still in the store",
        )
    return WritebackOutcome(
        memory_id=mid,
        action="retired",
        tombstone_id=tomb.tombstone_id,
        decision_id=did,
        message=f"{mid}: retired (tombstone {tomb.tombstone_id[:8]}); undo with restore",
    )


def _close(
    ledger: Any, label: str, tomb: Tombstone, actor: str | None, reason: str | None
) -> Tombstone:
    """Record that ``tomb``'s memory is back in the store (its ``restored`` event)."""
    return record_event(
        ledger,
        memory_id=tomb.memory_id,
        event="restored",
        store=label,
        tombstone_id=tomb.tombstone_id,
        content_hash=tomb.content_hash,
        actor=actor,
        reason=reason,
        decision_id=tomb.decision_id,
        run_ids=tomb.run_ids,
    )


def _restore_plan(
    ledger: Any,
    adapter: StoreAdapter,
    memory_id: str,
    actor: str | None,
    reason: str | None,
    reset_evidence: bool,
    dry_run: bool,
) -> _Plan:
    active: Tombstone | None = yield _ledger(lambda: active_tombstone(ledger, memory_id))
    if active is None or active.payload is None:
        return WritebackOutcome(
            memory_id=memory_id,
            action="not_in_tombstone",
            message=f"{memory_id}: no open tombstone (never retired, or restored already); "
            "nothing changed",
        )
    tid = active.tombstone_id
    present: StoredMemory | None = yield _fetch(adapter, memory_id)
    if present is not None and present.payload != active.payload:
        return WritebackOutcome(
            memory_id=memory_id,
            action="conflict",
            tombstone_id=tid,
            message=(
                f"{memory_id}: the store holds a different memory under this id now; "
                "not overwritten, the tombstone stays open"
            ),
        )
    if dry_run:
        return WritebackOutcome(
            memory_id=memory_id,
            action="would_restore",
            tombstone_id=tid,
            message=f"{memory_id}: would be restored from tombstone {tid[:8]}",
        )
    if present is None:
        yield _put_back(adapter, active.payload)
        back: StoredMemory | None = yield _fetch(adapter, memory_id)
        if back is None or back.payload != active.payload:
            return WritebackOutcome(
                memory_id=memory_id,
                action="failed",
                tombstone_id=tid,
                message=(
                    f"{memory_id}: the store does not return it exactly after the restore; "
                    "the tombstone stays open (it still holds the memory)"
                ),
            )
    # Two applies at one moment can leave a second open tombstone of the same memory:
    # the restore closes every open one that holds exactly what is now back.
    duplicates: list[Tombstone] = yield _ledger(lambda: open_tombstones(ledger, memory_id))
    for closing in [t for t in duplicates if t.payload == active.payload]:
        yield _ledger(functools.partial(_close, ledger, adapter.label, closing, actor, reason))
    if reset_evidence:
        yield _ledger(lambda: ledger.restore(memory_id, reason=reason, actor=actor))
    note = " (it was back in the store already)" if present is not None else ""
    return WritebackOutcome(
        memory_id=memory_id,
        action="restored",
        tombstone_id=tid,
        decision_id=active.decision_id,
        message=f"{memory_id}: restored from tombstone {tid[:8]}{note}",
    )


# --------------------------------------------------------------------------- operations
def _todo(ledger: Any, memory_ids: Sequence[str] | None) -> tuple[list[ReviewDecision], list[str]]:
    """The pending decisions to apply and the named memories that have none."""
    pending = pending_decisions(ledger, memory_ids)
    if memory_ids is None:
        return pending, []
    found = {d.memory_id for d in pending}
    return pending, [m for m in dict.fromkeys(memory_ids) if m not in found]


def _unaccepted(ledger: Any, memory_id: str) -> WritebackOutcome:
    active = active_tombstone(ledger, memory_id)
    if active is not None:
        return WritebackOutcome(
            memory_id=memory_id,
            action="already_retired",
            tombstone_id=active.tombstone_id,
            message=(
                f"{memory_id}: already retired (tombstone {active.tombstone_id[:8]}, "
                f"{_when(active)}); nothing changed"
            ),
        )
    return WritebackOutcome(
        memory_id=memory_id,
        action="not_accepted",
        message=f"{memory_id}: no pending accepted review (accept it first); nothing changed",
    )


def _applying(
    ledger: Any,
    adapter: StoreAdapter,
    memory_ids: Sequence[str] | None,
    actor: str | None,
    dry_run: bool,
) -> Steps[list[WritebackOutcome]]:
    """:func:`apply_reviews`' steps: the named memories without a decision, then each plan."""
    pending, unaccepted = yield _ledger(functools.partial(_todo, ledger, memory_ids))
    outcomes: list[WritebackOutcome] = []
    for memory_id in unaccepted:
        outcomes.append((yield _ledger(functools.partial(_unaccepted, ledger, memory_id))))
    for d in pending:
        outcomes.append((yield from _retire_plan(ledger, adapter, d, actor=actor, dry_run=dry_run)))
    return outcomes


def apply_reviews(
    ledger: Any,
    store: Any,
    memory_ids: Sequence[str] | None = None,
    *,
    actor: str | None = None,
    dry_run: bool = False,
    **adapter_options: Any,
) -> list[WritebackOutcome]:
    """Apply the pending accepted reviews to ``store`` as soft deletes (module docstring).

    Args:
        ledger: The ``HarmLedger`` holding the decisions (its namespace is the store's).
        store: A :class:`~.base.StoreAdapter`, or a store :func:`~.stores.adapter_for`
            knows (a LangChain ``VectorStore``, a LangGraph ``BaseStore``, a LlamaIndex
            ``VectorStoreIndex``).
        memory_ids: Only these memories (None: every pending decision).
        actor: Who applies them (recorded on the tombstones).
        dry_run: Report what would be retired; change nothing, record nothing.
        **adapter_options: Passed to :func:`~.stores.adapter_for` (e.g. ``namespace``).

    Returns:
        One outcome per memory.
    """
    adapter = adapter_for(store, **adapter_options)
    return run_steps(_applying(ledger, adapter, memory_ids, actor, dry_run))


async def aapply_reviews(
    ledger: Any,
    store: Any,
    memory_ids: Sequence[str] | None = None,
    *,
    actor: str | None = None,
    dry_run: bool = False,
    **adapter_options: Any,
) -> list[WritebackOutcome]:
    """Async :func:`apply_reviews` (the store's async methods; ledger writes in a thread)."""
    adapter = adapter_for(store, **adapter_options)
    return await arun_steps(_applying(ledger, adapter, memory_ids, actor, dry_run))


def restore_memory(
    ledger: Any,
    store: Any,
    memory_id: str,
    *,
    actor: str | None = None,
    reason: str | None = None,
    reset_evidence: bool = True,
    dry_run: bool = False,
    **adapter_options: Any,
) -> WritebackOutcome:
    """Put a retired memory back from its tombstone, byte for byte, under its id.

    Args:
        ledger: The ``HarmLedger``.
        store: As :func:`apply_reviews`.
        memory_id: The memory's id in your store.
        actor: Who restores it.
        reason: Why.
        reset_evidence: Also record a ledger restore (``HarmLedger.restore``): review
            does not propose it again until new verified evidence.
        dry_run: Report what would be restored; change nothing.
        **adapter_options: As :func:`apply_reviews`.

    Returns:
        The outcome.
    """
    adapter = adapter_for(store, **adapter_options)
    plan = _restore_plan(ledger, adapter, memory_id, actor, reason, reset_evidence, dry_run)
    return run_steps(plan)


async def arestore_memory(
    ledger: Any,
    store: Any,
    memory_id: str,
    *,
    actor: str | None = None,
    reason: str | None = None,
    reset_evidence: bool = True,
    dry_run: bool = False,
    **adapter_options: Any,
) -> WritebackOutcome:
    """Async :func:`restore_memory` (its arguments, result and errors)."""
    adapter = adapter_for(store, **adapter_options)
    plan = _restore_plan(ledger, adapter, memory_id, actor, reason, reset_evidence, dry_run)
    return await arun_steps(plan)
