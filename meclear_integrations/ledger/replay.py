"""Replaying feedback: clearance rerun with the person's correction as reference.

A feedback that says an answer was wrong and gives the right one (``correction``) can be
replayed offline: the recorded context is rebuilt (texts from your store through
``resolve``, checked against the recorded content hashes, or from the ledger when it
stores texts), the engine runs with an evaluator that judges against the correction, the
memories the feedback named are tried first as the prior candidate (verified like any
other, never trusted), and the result is recorded as a ``replay`` run with success signal
``feedback``. Memories the original run cleared but the verified replay keeps were wrongly
suppressed: they are restored.

A *positive* feedback naming memories ("the answer was right, and these notes are good")
is a claim, never acted on alone (unless recorded with ``trusted=True``): its replay runs
the clearance on the recorded context against the correction, and only the named memories
that the verified replay keeps, with the answer right, are exonerated. A positive feedback on
a run that had cleared the memory (so the answer it calls right was given *without* it)
therefore exonerates nothing unless the context *with* it verifies; an exoneration is
scoped to the question (``HarmLedger.exonerate``), not a global restore.

Authority (``FeedbackRecord.authority``): only a reviewer's or an operator's replay acts.
An end user's replay (the default authority) is verified against that user's correction,
but it settles, restores and exonerates nothing, and a background request does not withhold
its harm: the harm is only offered to the loop's next run of the question, which verifies it
with its own signal (reference or live judge) before using it, so one untrusted verdict (a
stale value given as the "correction", the true memory named as the suspect) changes no
other user's answer, while a true correction the live judge confirms fixes the next ask.

The routine replay (:func:`replay_pending`) then re-verifies every *challenge*: a run that
withheld a settled harm the live judge did not confirm (``ledger.reverify``), judged against
the settlement's own evidence, which upholds or lifts it.

The question's text: the ledger's (kept unless ``store_text=False``), else ``query=``, else
``trace_query(run)`` (e.g. read from the traced run's inputs; the LangChain helper reads
LangSmith's); a clear :class:`ReplayError` when none has it.

Framework-free: ``evaluator_for(query, reference, memories)`` builds the evaluator (the
LangChain helper in ``meclear_integrations.langchain.feedback`` builds it from a
``ClearingRetriever``'s agent and judge).
"""

from __future__ import annotations

import functools

from pydantic import BaseModel, ConfigDict

from ..core.concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..core.config import ClearanceConfig
from ..core.engine import MeClearEngine
from ..core.memory import Memory
from ..core.report import ClearanceReport
from .records import FeedbackRecord, RunRecord
from .replay_context import (
    EvaluatorFactory,
    ReplayError,
    Resolver,
    TraceQuery,
    clearance_step,
    query_text,
    read_back,
)
from .reverify import ReverifyResult, reverify_pending
from .store import HarmLedger

__all__ = [
    "ReplayError",
    "ReplayResult",
    "areplay_feedback",
    "query_text",
    "replay_feedback",
    "replay_pending",
]


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
    exonerated: list[str] = []
    """For positive feedback: the named memories the verified replay kept with the answer
    right (their harm lifted for this question only)."""


def _prepare(
    ledger: HarmLedger,
    feedback: FeedbackRecord | str,
    query: str | None,
    resolve: Resolver | None,
    trace_query: TraceQuery | None = None,
) -> tuple[FeedbackRecord, RunRecord, str, list[Memory], str]:
    record = ledger.get_feedback(feedback) if isinstance(feedback, str) else feedback
    if not record.correction or (record.correct and not record.memory_ids):
        raise ReplayError(
            f"feedback {record.feedback_id} is not replayable: it needs a correction (the "
            "reference the replay judges against) and, when correct=True, the memories it "
            "vouches for"
        )
    original = ledger.find_run(record.run_id)
    text, memories, source = read_back(ledger, original, query, resolve, trace_query)
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
    exonerated: list[str] = []
    # an end user's correction vouches for nobody else's answer: the replay is recorded as
    # history and acts on no memory (``FeedbackRecord.authority``)
    if report.status == "complete" and report.recovered and record.authority != "end_user":
        kept = set(report.kept_ids)
        hashes = {m.memory_id: m.content_hash for m in original.memories}
        for memory_id in record.memory_ids if record.correct else ():
            if memory_id in kept:
                ledger.exonerate(
                    memory_id, content_hash=hashes[memory_id], query=text, run_id=run.run_id
                )
                exonerated.append(memory_id)
        for memory_id in () if record.correct else original.cleared_ids:
            if memory_id in kept:
                ledger.restore(
                    memory_id,
                    reason="kept by a verified feedback replay",
                    feedback_id=record.feedback_id,
                    run_id=run.run_id,
                )
                restored.append(memory_id)
    return ReplayResult(
        feedback=record,
        original=original,
        report=report,
        run=run,
        restored=restored,
        exonerated=exonerated,
    )


def _suspects(record: FeedbackRecord) -> list[str]:
    """The prior candidate of a replay: the memories a negative feedback blames.

    None for a positive one, whose named memories are on trial for being good.
    """
    return [] if record.correct else list(record.memory_ids)


def _replaying(
    ledger: HarmLedger,
    feedback: FeedbackRecord | str,
    evaluator_for: EvaluatorFactory,
    query: str | None,
    resolve: Resolver | None,
    config: ClearanceConfig | None,
    trace_query: TraceQuery | None,
    record_kwargs: dict[str, object],
) -> Steps[ReplayResult]:
    """:func:`replay_feedback`'s steps: database work, the engine's rerun, the recording."""
    record, original, text, memories, source = yield Call(
        functools.partial(_prepare, ledger, feedback, query, resolve, trace_query)
    )
    evaluate = evaluator_for(text, record.correction or "", memories)
    engine = MeClearEngine(config or ClearanceConfig())
    report = yield clearance_step(engine, memories, evaluate, _suspects(record))
    finish = functools.partial(
        _finish, ledger, record, original, text, memories, source, report, record_kwargs
    )
    result: ReplayResult = yield Call(finish)
    return result


def replay_feedback(
    ledger: HarmLedger,
    feedback: FeedbackRecord | str,
    *,
    evaluator_for: EvaluatorFactory,
    query: str | None = None,
    resolve: Resolver | None = None,
    config: ClearanceConfig | None = None,
    trace_query: TraceQuery | None = None,
    **record_kwargs: object,
) -> ReplayResult:
    """Replay one feedback with its correction as reference (module docstring).

    Args:
        ledger: The harm ledger holding the feedback and its run.
        feedback: A feedback record or its id.
        evaluator_for: ``evaluator_for(query, reference, memories) -> evaluate``.
        query: The query text when the ledger does not store texts.
        trace_query: ``trace_query(run) -> text | None``: reads the question from the
            original run's trace when neither the ledger nor ``query`` has it.
        resolve: ``resolve(ids) -> {id: text}``: your store's texts (checked against the
            recorded hashes).
        config: The engine configuration (None: the package default).
        **record_kwargs: Ledger fields such as ``agent_model``, ``judge_model``,
            ``model_calls``.

    Returns:
        The replay's clearance report and the run it recorded.

    Raises:
        ReplayError: The feedback cannot be replayed (no correction, a positive one naming
            no memory, no question text, texts missing or not matching the recorded hashes).
    """
    args = (ledger, feedback, evaluator_for, query, resolve, config, trace_query)
    return run_steps(_replaying(*args, record_kwargs))


async def areplay_feedback(
    ledger: HarmLedger,
    feedback: FeedbackRecord | str,
    *,
    evaluator_for: EvaluatorFactory,
    query: str | None = None,
    resolve: Resolver | None = None,
    config: ClearanceConfig | None = None,
    trace_query: TraceQuery | None = None,
    **record_kwargs: object,
) -> ReplayResult:
    """:func:`replay_feedback` with the engine on the event loop.

    The same steps (one flow, ``core.concurrency.step_driver``): an async evaluator runs
    natively; the database work runs in worker threads. Arguments, result and errors are
    those of :func:`replay_feedback`.
    """
    args = (ledger, feedback, evaluator_for, query, resolve, config, trace_query)
    return await arun_steps(_replaying(*args, record_kwargs))


def replay_pending(
    ledger: HarmLedger,
    *,
    evaluator_for: EvaluatorFactory,
    resolve: Resolver | None = None,
    config: ClearanceConfig | None = None,
    trace_query: TraceQuery | None = None,
    reverify: bool = True,
    reverify_quiet_seconds: float | None = None,
) -> list[ReplayResult | ReverifyResult | ReplayError]:
    """Replay every pending feedback, then re-verify challenged settlements.

    A feedback that cannot be replayed is returned as its :class:`ReplayError`, the others go on.
    With ``reverify`` (the default), every pending challenge (a settled harm the live judge
    did not confirm, ``ledger.reverify``) is answered after them: its
    ``reverify.ReverifyResult`` (or error) follows the replays in the list.

    Args:
        ledger: The harm ledger.
        evaluator_for: ``evaluator_for(query, reference, memories) -> evaluate``.
        resolve: ``resolve(ids) -> {id: text}``: your store's texts.
        config: The engine configuration (None: the package default).
        trace_query: Reads a question from its run's trace when the ledger has no text.
        reverify: Also answer the pending challenges (``ledger.reverify``).
        reverify_quiet_seconds: The quiet period after an ``upheld`` verdict
            (``settlement.pending_challenges``; None: the ledger's).

    Returns:
        One result or error per pending feedback, oldest first, then one
        ``ReverifyResult`` or error per pending challenge.
    """
    results: list[ReplayResult | ReverifyResult | ReplayError] = []
    for record in ledger.pending_replays():
        try:
            results.append(
                replay_feedback(
                    ledger,
                    record,
                    evaluator_for=evaluator_for,
                    resolve=resolve,
                    config=config,
                    trace_query=trace_query,
                )
            )
        except ReplayError as exc:
            results.append(exc)
    if reverify:
        results.extend(
            reverify_pending(
                ledger,
                evaluator_for=evaluator_for,
                resolve=resolve,
                config=config,
                trace_query=trace_query,
                quiet_seconds=reverify_quiet_seconds,
            )
        )
    return results
