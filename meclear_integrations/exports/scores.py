"""One score per memory of a clearance, ready for any review tool.

The harm score is ``-psi_i`` (the negated Shapley contribution, Eq. 3 / Eq. 11): positive
when keeping the memory lowers the task value, the larger the more harmful. The verdict
says what the clearance did: ``cleared`` (removed, verified), ``harmful`` (flagged
harmful, Eq. 14, but kept: not needed for recovery), ``kept`` (no harm found), or
``unattributed`` (no attribution ran: an early exit that verified the full context, a
skipped or failed run).

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 3, 11, 14.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..runtime.hashing import content_hash

__all__ = ["MemoryScore", "Verdict", "memory_scores"]

Verdict = Literal["cleared", "harmful", "kept", "unattributed"]
"""What the clearance did with one memory (module docstring)."""


class MemoryScore(BaseModel):
    """The clearance's result for one memory."""

    model_config = ConfigDict(frozen=True)

    memory_id: str
    """The memory's id in your store."""
    position: int
    """Its index in the retrieval order (the document position on a retriever span)."""
    content_hash: str | None
    """SHA-256 of its text (act on it only while the stored text still has it)."""
    verdict: Verdict
    """``cleared``, ``harmful``, ``kept`` or ``unattributed`` (module docstring)."""
    harm: float | None
    """``-psi_i``: positive for a harmful contribution (None: not attributed)."""
    shapley: float | None
    """``psi_i`` (Eq. 3 / Eq. 11)."""
    shapley_interval: tuple[float, float] | None
    """The interval of ``psi_i``."""
    loo_effect: float | None
    """``d_i`` (Eq. 7), when measured."""
    run_status: str
    """The run's status (``complete``, ``failed``, ``unverified``, ``skipped``)."""
    recovered: bool
    """The returned context verifiably answers."""

    def comment(self) -> str:
        """A one-line human summary (ids and numbers, no memory text).

        Returns:
            For example ``memory m3: cleared; harm +0.500, psi -0.500 [-0.61, -0.39]``.
        """
        if self.shapley is None:
            return f"memory {self.memory_id}: {self.verdict} (run {self.run_status})"
        text = f"memory {self.memory_id}: {self.verdict}; harm {-self.shapley:+.3f}"
        text += f", psi {self.shapley:+.3f}"
        if self.shapley_interval is not None:
            lo, hi = self.shapley_interval
            text += f" [{lo:+.2f}, {hi:+.2f}]"
        return text

    def fields(self) -> dict[str, Any]:
        """The score as JSON-ready metadata.

        Returns:
            Every field, the interval as a list.
        """
        return self.model_dump(mode="json")


def _verdict(cleared: bool, harmful: bool, attributed: bool) -> Verdict:
    if cleared:
        return "cleared"
    if not attributed:
        return "unattributed"
    return "harmful" if harmful else "kept"


def memory_scores(source: Any) -> list[MemoryScore]:
    """Per-memory scores of a clearance, in retrieval order.

    Args:
        source: A :class:`~meclear_integrations.core.ClearanceReport`, or a ledger
            ``RunRecord`` (``HarmLedger.find_run`` / ``runs``).

    Returns:
        One score per memory of the context.

    Raises:
        TypeError: ``source`` is neither.

    Example:
        >>> from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
        >>> context = [Memory(id="good", content="a"), Memory(id="stale", content="b")]
        >>> report = MeClearEngine(ClearanceConfig()).clear(
        ...     context, lambda c, t: float(all(m.id != "stale" for m in c) and bool(c))
        ... )
        >>> [(s.memory_id, s.verdict) for s in memory_scores(report)]
        [('good', 'kept'), ('stale', 'cleared')]
    """
    if hasattr(source, "attributions") and hasattr(source, "kept"):
        return _from_report(source)
    if hasattr(source, "memories") and hasattr(source, "run_id"):
        return _from_run(source)
    raise TypeError(f"expected a ClearanceReport or a ledger RunRecord, got {type(source)!r}")


def _from_report(report: Any) -> list[MemoryScore]:
    attributions = {a.memory_id: a for a in report.attributions}
    cleared = set(report.cleared_ids)
    memories = sorted(
        [*report.kept, *report.cleared],
        key=lambda m: attributions[m.id].position if m.id in attributions else 0,
    )
    order = {m.id: i for i, m in enumerate(memories)}
    if attributions:
        order = {mid: a.position for mid, a in attributions.items()}
    scores = []
    for memory in memories:
        a = attributions.get(memory.id)
        scores.append(
            MemoryScore(
                memory_id=memory.id,
                position=order.get(memory.id, 0),
                content_hash=content_hash(memory.content),
                verdict=_verdict(memory.id in cleared, bool(a and a.harmful), a is not None),
                harm=-a.shapley if a is not None else None,
                shapley=a.shapley if a is not None else None,
                shapley_interval=a.shapley_interval if a is not None else None,
                loo_effect=a.loo_effect if a is not None else None,
                run_status=report.status,
                recovered=report.recovered,
            )
        )
    return sorted(scores, key=lambda s: s.position)


def _from_run(run: Any) -> list[MemoryScore]:
    return [
        MemoryScore(
            memory_id=m.memory_id,
            position=m.position,
            content_hash=m.content_hash,
            verdict=_verdict(m.cleared, m.harmful, m.shapley is not None),
            harm=-m.shapley if m.shapley is not None else None,
            shapley=m.shapley,
            shapley_interval=m.shapley_interval,
            loo_effect=m.loo_effect,
            run_status=run.status,
            recovered=run.recovered,
        )
        for m in sorted(run.memories, key=lambda m: m.position)
    ]
