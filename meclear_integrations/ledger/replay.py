"""Replaying negative feedback: clearance rerun with the person's correction as reference.

A feedback that says an answer was wrong and gives the right one (``correction``) can be
replayed offline: the recorded context is rebuilt (texts from your store through
``resolve``, checked against the recorded content hashes, or from the ledger when it
stores texts), the engine runs with an evaluator that judges against the correction, the
memories the feedback named are tried first as the prior candidate (verified like any
other, never trusted), and the result is recorded as a ``replay`` run with success signal
``feedback``. Memories the original run cleared but the verified replay keeps were wrongly
suppressed: they are restored.

Framework-free: ``evaluator_for(query, reference, memories)`` builds the evaluator (the
LangChain helper in ``meclear_integrations.langchain.feedback`` builds it from a
``ClearingRetriever``'s agent and judge).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from ..core.config import ClearanceConfig
from ..core.engine import MeClearEngine
from ..core.errors import MeClearError
from ..core.evaluation import Evaluator
from ..core.memory import Memory
from ..core.report import ClearanceReport
from ..hashing import content_hash
from .records import FeedbackRecord, RunRecord
from .store import HarmLedger

__all__ = ["ReplayError", "ReplayResult", "areplay_feedback", "replay_feedback", "replay_pending"]

EvaluatorFactory = Callable[[str, str, list[Memory]], Evaluator]
Resolver = Callable[[Sequence[str]], Mapping[str, str]]


class ReplayError(MeClearError, ValueError):
    """A feedback cannot be replayed (no correction, no query text, memories changed)."""


class ReplayResult(BaseModel):
    """A replayed feedback: the original run, the verified replay and what it restored."""

    model_config = ConfigDict(frozen=True)

    feedback: FeedbackRecord
    """The feedback replayed."""
    original: RunRecord
    """The run the feedback was about."""
    report: ClearanceReport
    """The replay's clearance report."""
    run: RunRecord
    """The replay as recorded (origin ``replay``, success signal ``feedback``)."""
    restored: list[str]
    """Memories the original cleared that the verified replay keeps (now restored)."""


def _context(original: RunRecord, resolve: Resolver | None) -> tuple[list[Memory], str]:
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


def _prepare(
    ledger: HarmLedger,
    feedback: FeedbackRecord | str,
    query: str | None,
    resolve: Resolver | None,
) -> tuple[FeedbackRecord, RunRecord, str, list[Memory], str]:
    record = ledger.get_feedback(feedback) if isinstance(feedback, str) else feedback
    if record.correct or not record.correction:
        raise ReplayError(
            f"feedback {record.feedback_id} is not replayable: it needs correct=False and a "
            "correction (the reference the replay judges against)"
        )
    original = ledger.find_run(record.run_id)
    text = query if query is not None else original.query_text
    if text is None:
        raise ReplayError(
            "the ledger holds no query text (store_text=False): pass query= (e.g. from the "
            "traced run's inputs)"
        )
    if ledger.query_id(text) != original.query_id:
        raise ReplayError(f"query= does not hash to the query id of run {original.run_id}")
    memories, source = _context(original, resolve)
    return record, original, text, memories, source


def _finish(
    ledger: HarmLedger,
    record: FeedbackRecord,
    original: RunRecord,
    text: str,
    memories: list[Memory],
    source: str,
    report: ClearanceReport,
    record_kwargs: dict[str, object],
) -> ReplayResult:
    run = ledger.record(
        report,
        query=text,
        context=memories,
        origin="replay",
        success_signal="feedback",
        replay_of=original.run_id,
        feedback_id=record.feedback_id,
        guided_by="feedback",
        extra={"texts_from": source},
        **record_kwargs,  # type: ignore[arg-type]
    )
    restored: list[str] = []
    if report.status == "complete" and report.recovered:
        kept = set(report.kept_ids)
        for memory_id in original.cleared_ids:
            if memory_id in kept:
                ledger.restore(
                    memory_id,
                    reason="kept by a verified feedback replay",
                    feedback_id=record.feedback_id,
                    run_id=run.run_id,
                )
                restored.append(memory_id)
    return ReplayResult(
        feedback=record, original=original, report=report, run=run, restored=restored
    )


def replay_feedback(
    ledger: HarmLedger,
    feedback: FeedbackRecord | str,
    *,
    evaluator_for: EvaluatorFactory,
    query: str | None = None,
    resolve: Resolver | None = None,
    config: ClearanceConfig | None = None,
    **record_kwargs: object,
) -> ReplayResult:
    """Replay one negative feedback with its correction as reference (module docstring).

    Args:
        ledger: The harm ledger holding the feedback and its run.
        feedback: A feedback record or its id.
        evaluator_for: ``evaluator_for(query, reference, memories) -> evaluate``.
        query: The query text when the ledger does not store texts.
        resolve: ``resolve(ids) -> {id: text}``: your store's texts (checked against the
            recorded hashes).
        config: The engine configuration (None: the package default).
        **record_kwargs: Ledger fields such as ``agent_model``, ``judge_model``,
            ``model_calls``.

    Returns:
        The replay's clearance report and the run it recorded.

    Raises:
        ReplayError: The feedback cannot be replayed (not negative, no correction, texts
            missing or not matching the recorded hashes).
    """
    record, original, text, memories, source = _prepare(ledger, feedback, query, resolve)
    evaluate = evaluator_for(text, record.correction or "", memories)
    engine = MeClearEngine(config or ClearanceConfig())
    report = engine.clear(memories, evaluate, prior_harmful=record.memory_ids)
    return _finish(ledger, record, original, text, memories, source, report, record_kwargs)


async def areplay_feedback(
    ledger: HarmLedger,
    feedback: FeedbackRecord | str,
    *,
    evaluator_for: EvaluatorFactory,
    query: str | None = None,
    resolve: Resolver | None = None,
    config: ClearanceConfig | None = None,
    **record_kwargs: object,
) -> ReplayResult:
    """:func:`replay_feedback` with the engine on the event loop.

    An async evaluator runs natively; the database work runs in worker threads. Arguments,
    result and errors are those of :func:`replay_feedback`.
    """
    record, original, text, memories, source = await asyncio.to_thread(
        _prepare, ledger, feedback, query, resolve
    )
    evaluate = evaluator_for(text, record.correction or "", memories)
    engine = MeClearEngine(config or ClearanceConfig())
    report = await engine.aclear(memories, evaluate, prior_harmful=record.memory_ids)
    return await asyncio.to_thread(
        _finish, ledger, record, original, text, memories, source, report, record_kwargs
    )


def replay_pending(
    ledger: HarmLedger,
    *,
    evaluator_for: EvaluatorFactory,
    resolve: Resolver | None = None,
    config: ClearanceConfig | None = None,
) -> list[ReplayResult | ReplayError]:
    """Replay every pending negative feedback (``HarmLedger.pending_replays``).

    A feedback that cannot be replayed is returned as its :class:`ReplayError`, the others go on.

    Args:
        ledger: The harm ledger.
        evaluator_for: ``evaluator_for(query, reference, memories) -> evaluate``.
        resolve: ``resolve(ids) -> {id: text}``: your store's texts.
        config: The engine configuration (None: the package default).

    Returns:
        One result or error per pending feedback, oldest first.
    """
    results: list[ReplayResult | ReplayError] = []
    for record in ledger.pending_replays():
        try:
            results.append(
                replay_feedback(
                    ledger, record, evaluator_for=evaluator_for, resolve=resolve, config=config
                )
            )
        except ReplayError as exc:
            results.append(exc)
    return results
