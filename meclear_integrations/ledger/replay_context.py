"""What a replay reads back: the question and the recorded context of a ledger run.

Shared by feedback replays (``ledger.replay``) and settlement re-verifications
(``ledger.reverify``): the question's text (``query=``, the ledger's, else the trace's) and
the recorded memories (your store's texts, checked against the recorded content hashes, or
the ledger's), with a clear :class:`ReplayError` when either cannot be read back
(:func:`read_back`), and the engine's rerun as one step of their flows
(:func:`clearance_step`: written once, driven by ``core.concurrency.step_driver``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..core.concurrency.step_driver import Call
from ..core.engine import MeClearEngine
from ..core.errors import MeClearError
from ..core.judging.evaluator import Evaluator
from ..core.memory import Memory
from ..core.prior import PriorCandidate
from ..runtime.hashing import content_hash
from .records import RunRecord

if TYPE_CHECKING:
    from .store import HarmLedger

__all__ = [
    "EvaluatorFactory",
    "ReplayError",
    "Resolver",
    "TraceQuery",
    "clearance_step",
    "query_text",
    "read_back",
    "recorded_context",
]

EvaluatorFactory = Callable[[str, str, list[Memory]], Evaluator]
Resolver = Callable[[Sequence[str]], Mapping[str, str]]
TraceQuery = Callable[[RunRecord], "str | None"]


class ReplayError(MeClearError, ValueError):
    """A feedback cannot be replayed (no correction, no query text, memories changed)."""


def recorded_context(original: RunRecord, resolve: Resolver | None) -> tuple[list[Memory], str]:
    """The recorded context of ``original``: your store's texts (checked) or the ledger's.

    Args:
        original: The recorded run.
        resolve: ``resolve(ids) -> {id: text}``: your store's texts; None: the ledger's.

    Returns:
        (memories in the recorded order, where the texts came from: ``store`` / ``ledger``).

    Raises:
        ReplayError: A memory missing from the store, changed since (content hash), or no
            texts anywhere.
    """
    ids = original.memory_ids
    if resolve is not None:
        texts = dict(resolve(ids))
        missing = [i for i in ids if i not in texts]
        if missing:
            raise ReplayError(
                f"the store no longer holds memories {missing} of run {original.run_id}"
            )
        changed = [
            m.memory_id
            for m in original.memories
            if content_hash(texts[m.memory_id]) != m.content_hash
        ]
        if changed:
            raise ReplayError(
                f"memories {changed} changed since run {original.run_id} (content hash differs); "
                "the decision cannot be replayed on the same context"
            )
        return [Memory(id=i, content=texts[i]) for i in ids], "store"
    if any(m.text is None for m in original.memories):
        raise ReplayError(
            "the ledger holds no memory texts (store_text=False): pass resolve= to read them "
            "from your store"
        )
    return [Memory(id=m.memory_id, content=m.text or "") for m in original.memories], "ledger"


def query_text(
    original: RunRecord, query: str | None, trace_query: TraceQuery | None = None
) -> tuple[str, str]:
    """The question of ``original``: ``query=``, the ledger's text, else the trace's.

    Args:
        original: The run the feedback is about.
        query: The text the caller gave.
        trace_query: Reads the question from the run's trace (``trace_run_id``).

    Returns:
        (text, where it came from).

    Raises:
        ReplayError: No source holds the question.
    """
    if query is not None:
        return query, "query= text"
    if original.query_text is not None:
        return original.query_text, "ledger's query text"
    found = trace_query(original) if trace_query is not None and original.trace_run_id else None
    if found:
        return found, f"question read from trace {original.trace_run_id}"
    where = (
        f"its trace ({original.trace_system or 'tracing'} run {original.trace_run_id}) gave none"
        if original.trace_run_id and trace_query is not None
        else "the run has no trace to read it from"
        if not original.trace_run_id
        else "no trace reader was given (trace_query=)"
    )
    raise ReplayError(
        f"run {original.run_id}: the ledger holds no query text (store_text=False) and {where}; "
        "pass query= (e.g. from the traced run's inputs)"
    )


def read_back(
    ledger: HarmLedger,
    run: RunRecord,
    query: str | None,
    resolve: Resolver | None,
    trace_query: TraceQuery | None,
) -> tuple[str, list[Memory], str]:
    """The question and the context of a recorded ``run``, checked against its record.

    Args:
        ledger: The ledger that recorded ``run`` (its query hashing).
        run: The recorded run.
        query: The text the caller gave.
        resolve: ``resolve(ids) -> {id: text}``: your store's texts; None: the ledger's.
        trace_query: Reads the question from the run's trace.

    Returns:
        (question, memories in the recorded order, where the texts came from).

    Raises:
        ReplayError: No question, one that does not hash to the run's query id, or
            texts that cannot be read back (:func:`recorded_context`).
    """
    text, where = query_text(run, query, trace_query)
    if ledger.query_id(text) != run.query_id:
        raise ReplayError(f"the {where} does not hash to the query id of run {run.run_id}")
    memories, source = recorded_context(run, resolve)
    return text, memories, source


def clearance_step(
    engine: MeClearEngine,
    memories: list[Memory],
    evaluate: Evaluator,
    prior: Iterable[str] | PriorCandidate,
) -> Call:
    """The engine's rerun as a step: ``clear`` on the sync path, ``aclear`` on the loop."""
    return Call(
        lambda: engine.clear(memories, evaluate, prior_harmful=prior),
        lambda: engine.aclear(memories, evaluate, prior_harmful=prior),
    )
