"""Re-verifying a settled harm the live judge did not confirm (``ledger.settlement``).

A *challenge* is a recorded run whose clearance was a settled prior candidate that the live
judge did not confirm (``status="complete"``, ``recovered=False``,
``clearance_search="prior"``). :func:`reverify_settlement` answers one, per withheld memory
by the authority of its settlement (``settlement.settlements``):

- ``end_user`` (a correction nobody vouched for, e.g. settled before ledger schema
  version 6): lifted at once, no model call;
- ``reviewer`` / ``operator``: re-verified against that feedback's correction on the
  challenge's context (texts from the ledger or ``resolve``, checked against the recorded
  hashes): the engine runs with ``evaluator_for(query, correction, memories)``, the
  challenged memories tried first as a scoped candidate (verified, never trusted); the run
  is recorded (origin ``reverify``, ``replay_of`` the challenge). The settlement stands
  when that run recovers with the memory cleared (event ``upheld``), else it is lifted
  (event ``lifted``, the memory served again for that question);
- ``reference``: re-verified like a correction against ``reference=`` when given (e.g. your
  evaluation set's answer), else against the reference the settling run kept (the ledger
  keeps it, redacted, with the run when ``store_text=True``: ``HarmLedger.record``'s
  ``reference``); without either it stands (the application's own reference) with an
  ``upheld`` event saying no evidence was stored.

A memory the challenge withheld that is no longer settled (lifted or restored since) gets a
``checked`` event. :func:`reverify_pending` answers every pending challenge, newest per
question (``settlement.pending_challenges``; after an ``upheld`` verdict, the question's
challenges of the same context within ``quiet_seconds``, a day by default, are covered by
it); ``replay.replay_pending`` (the routine replay) calls it after the feedback replays. A
lift is reversible by a reviewer or an operator (:func:`reinstate_settlement`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from ..core.concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..core.config import ClearanceConfig
from ..core.engine import MeClearEngine
from ..core.memory import Memory
from ..core.prior import PriorCandidate
from ..core.report import ClearanceReport
from .database import read_transaction, single_read, write_transaction
from .records import RunRecord
from .replay_context import (
    EvaluatorFactory,
    ReplayError,
    Resolver,
    TraceQuery,
    clearance_step,
    read_back,
)
from .settlement import (
    REVERIFY_QUIET_SECONDS,
    Key,
    Settlement,
    check,
    is_challenge,
    lift,
    pending_challenges,
    reinstate,
    settled_by,
    settlements,
    uphold,
)
from .store import HarmLedger

__all__ = [
    "ReverifyResult",
    "areverify_settlement",
    "quiet_of",
    "reinstate_settlement",
    "reverify_pending",
    "reverify_settlement",
]

ACTOR = "meclear:reverify"
"""The actor recorded on a re-verification's verdicts."""


class ReverifyResult(BaseModel):
    """One challenge answered: what stands, what was lifted, and the evidence runs."""

    model_config = ConfigDict(frozen=True)

    challenge: RunRecord
    """The run whose live judge rejected the answer without the settled memories."""
    upheld: list[str] = []
    """Memories whose settlement stands (they stay withheld)."""
    lifted: list[str] = []
    """Memories whose settlement was lifted (served again for that question)."""
    runs: list[RunRecord] = []
    """The re-verification runs recorded (origin ``reverify``)."""
    reasons: dict[str, str] = {}
    """Per memory, why."""


class _Plan:
    """What one challenge needs: verdicts without a model call, and groups to verify."""

    def __init__(self) -> None:
        self.lift: dict[str, tuple[Key, str, Settlement | None]] = {}
        self.uphold: dict[str, tuple[str, Settlement | None]] = {}
        self.checked: dict[str, str] = {}
        self.groups: dict[tuple[str, str | None], list[tuple[Key, Settlement | None]]] = {}


def _challenge(ledger: HarmLedger, challenge: RunRecord | str) -> RunRecord:
    run = ledger.find_run(challenge) if isinstance(challenge, str) else challenge
    if not is_challenge(run.status, run.recovered, run.clearance_search, len(run.cleared_ids)):
        raise ReplayError(
            f"run {run.run_id} is not a challenge: only a complete run whose settled prior "
            "candidate the live judge did not confirm (recovered=False, clearance_search="
            "'prior') is re-verified"
        )
    return run


def _plan(
    ledger: HarmLedger,
    run: RunRecord,
    text: str,
    memories: list[Memory],
    reference: str | None,
) -> _Plan:
    plan = _Plan()
    harms = {h.memory_id: h for h in ledger.scoped_harm(text, memories) if h.settled}
    keys = {mid: (h.memory_id, h.content_hash, h.query_id) for mid, h in harms.items()}
    with single_read(ledger.engine) as conn:
        found = settlements(conn, ledger.namespace, keys.values())
    for mid in run.cleared_ids:
        if mid not in keys:
            plan.checked[mid] = "no longer settled for this question (lifted or restored since)"
            continue
        key = keys[mid]
        s = found.get(key)
        if s is not None and s.authority == "end_user":
            plan.lift[mid] = (
                key,
                f"settled by an end user's correction alone (feedback {s.feedback_id}), which "
                f"vouches for nobody else's answer; the live judge rejected the answer without "
                f"it (run {run.run_id})",
                s,
            )
        elif s is not None and s.correction is not None:
            plan.groups.setdefault((s.correction, s.feedback_id), []).append((key, s))
        elif reference is not None:
            plan.groups.setdefault((reference, None), []).append((key, s))
        elif s is not None and s.reference is not None:
            plan.groups.setdefault((s.reference, None), []).append((key, s))
        else:
            what = "a reference run" if s is not None else "no recorded clearing run"
            plan.uphold[mid] = (
                f"settled by {what}; the ledger kept no reference answer to re-verify it "
                f"against (store_text=False, or recorded before references were kept; pass "
                f"reference=), so the settlement stands; the live judge "
                f"rejected the answer without it (run {run.run_id})",
                s,
            )
    return plan


def _record(
    ledger: HarmLedger,
    run: RunRecord,
    text: str,
    memories: list[Memory],
    source: str,
    report: ClearanceReport,
    feedback_id: str | None,
) -> RunRecord:
    return ledger.record(
        report,
        query=text,
        context=memories,
        origin="reverify",
        success_signal="feedback" if feedback_id is not None else "reference",
        replay_of=run.run_id,
        feedback_id=feedback_id,
        guided_by="ledger",
        extra={"texts_from": source, "reverify_of": run.run_id},
    )


def _write(
    ledger: HarmLedger,
    run: RunRecord,
    plan: _Plan,
    verified: list[tuple[list[tuple[Key, Settlement | None]], ClearanceReport, RunRecord]],
    actor: str,
) -> ReverifyResult:
    upheld: list[str] = []
    lifted: list[str] = []
    reasons: dict[str, str] = {}
    at = ledger._now()
    ns = ledger.namespace
    with write_transaction(ledger.engine) as conn:
        for mid, (key, why, s) in plan.lift.items():
            fid = s.feedback_id if s else None
            lift(conn, ns, key, at=at, reason=why, actor=actor, run_id=run.run_id, feedback_id=fid)
            lifted.append(mid)
            reasons[mid] = why
        for mid, (why, s) in plan.uphold.items():
            fid = s.feedback_id if s else None
            uphold(
                conn, ns, mid, at=at, reason=why, actor=actor, run_id=run.run_id, feedback_id=fid
            )
            upheld.append(mid)
            reasons[mid] = why
        for mid, why in plan.checked.items():
            check(conn, ns, mid, at=at, reason=why, actor=actor, run_id=run.run_id)
            reasons[mid] = why
        for members, report, evidence in verified:
            kept_out = set(report.cleared_ids) | set(report.withheld_ids)
            passed = report.status == "complete" and report.recovered
            for key, s in members:
                mid = key[0]
                fid = s.feedback_id if s else None
                what = f"feedback {fid}'s correction" if fid else "the given reference"
                if passed and mid in kept_out:
                    why = (
                        f"re-verified against {what} (run {evidence.run_id}): the answer without "
                        f"it is right, so the settlement stands although the live judge "
                        f"rejected it (run {run.run_id})"
                    )
                    uphold(conn, ns, mid, at=at, reason=why, actor=actor, run_id=evidence.run_id)
                    upheld.append(mid)
                else:
                    why = (
                        f"re-verification against {what} failed (run {evidence.run_id}: "
                        f"{report.status}, recovered={report.recovered}, "
                        f"{'cleared' if mid in kept_out else 'kept'}): the settlement is lifted; "
                        f"the live judge had rejected the answer without it (run {run.run_id})"
                    )
                    siblings = settled_by(conn, ns, mid, fid) if fid is not None else []
                    for each in dict.fromkeys([key, *siblings]):
                        lift(
                            conn,
                            ns,
                            each,
                            at=at,
                            reason=why,
                            actor=actor,
                            run_id=evidence.run_id,
                            feedback_id=fid,
                        )
                    lifted.append(mid)
                reasons[mid] = why
    return ReverifyResult(
        challenge=run,
        upheld=upheld,
        lifted=lifted,
        runs=[evidence for _, _, evidence in verified],
        reasons=reasons,
    )


def _prepare(
    ledger: HarmLedger,
    challenge: RunRecord | str,
    query: str | None,
    resolve: Resolver | None,
    trace_query: TraceQuery | None,
    reference: str | None,
) -> tuple[RunRecord, str, list[Memory], str, _Plan]:
    run = _challenge(ledger, challenge)
    text, memories, source = read_back(ledger, run, query, resolve, trace_query)
    return run, text, memories, source, _plan(ledger, run, text, memories, reference)


def _candidate(members: Sequence[tuple[Key, Settlement | None]]) -> PriorCandidate:
    return PriorCandidate(ids=tuple(key[0] for key, _ in members), scoped=True)


def _reverifying(
    ledger: HarmLedger,
    challenge: RunRecord | str,
    evaluator_for: EvaluatorFactory,
    query: str | None,
    resolve: Resolver | None,
    config: ClearanceConfig | None,
    trace_query: TraceQuery | None,
    reference: str | None,
    actor: str,
) -> Steps[ReverifyResult]:
    """:func:`reverify_settlement`'s steps: per evidence group a rerun and its recording."""
    run, text, memories, source, plan = yield Call(
        functools.partial(_prepare, ledger, challenge, query, resolve, trace_query, reference)
    )
    engine = MeClearEngine(config or ClearanceConfig())
    verified = []
    for (evidence, fid), members in plan.groups.items():
        evaluate = evaluator_for(text, evidence, memories)
        report = yield clearance_step(engine, memories, evaluate, _candidate(members))
        recorded = yield Call(
            functools.partial(_record, ledger, run, text, memories, source, report, fid)
        )
        verified.append((members, report, recorded))
    result: ReverifyResult = yield Call(
        functools.partial(_write, ledger, run, plan, verified, actor)
    )
    return result


def reverify_settlement(
    ledger: HarmLedger,
    challenge: RunRecord | str,
    *,
    evaluator_for: EvaluatorFactory,
    query: str | None = None,
    resolve: Resolver | None = None,
    config: ClearanceConfig | None = None,
    trace_query: TraceQuery | None = None,
    reference: str | None = None,
    actor: str = ACTOR,
) -> ReverifyResult:
    """Re-verify the settled harm one challenge withheld (module docstring).

    Args:
        ledger: The harm ledger.
        challenge: The challenge run (or its id): ``settlement.pending_challenges``.
        evaluator_for: ``evaluator_for(query, reference, memories) -> evaluate``.
        query: The question, when the ledger keeps no text.
        resolve: ``resolve(ids) -> {id: text}``: your store's texts.
        config: The engine configuration (None: the package default).
        trace_query: Reads the question from the run's trace.
        reference: The right answer, to re-verify a settlement by a reference run.
        actor: Recorded on the verdicts.

    Returns:
        What stands, what was lifted, and the re-verification runs.

    Raises:
        ReplayError: Not a challenge, or its question or texts cannot be read back.
    """
    args = (ledger, challenge, evaluator_for, query, resolve, config, trace_query, reference, actor)
    return run_steps(_reverifying(*args))


async def areverify_settlement(
    ledger: HarmLedger,
    challenge: RunRecord | str,
    *,
    evaluator_for: EvaluatorFactory,
    query: str | None = None,
    resolve: Resolver | None = None,
    config: ClearanceConfig | None = None,
    trace_query: TraceQuery | None = None,
    reference: str | None = None,
    actor: str = ACTOR,
) -> ReverifyResult:
    """:func:`reverify_settlement` with the engine on the event loop (same arguments).

    The same steps (one flow, ``core.concurrency.step_driver``): an async evaluator runs
    natively; the database work runs in worker threads.
    """
    args = (ledger, challenge, evaluator_for, query, resolve, config, trace_query, reference, actor)
    return await arun_steps(_reverifying(*args))


def reverify_pending(
    ledger: HarmLedger,
    *,
    evaluator_for: EvaluatorFactory,
    resolve: Resolver | None = None,
    config: ClearanceConfig | None = None,
    trace_query: TraceQuery | None = None,
    limit: int = 100,
    quiet_seconds: float | None = None,
) -> list[ReverifyResult | ReplayError]:
    """Answer every pending challenge, newest per question (module docstring).

    Args:
        ledger: The harm ledger.
        evaluator_for: ``evaluator_for(query, reference, memories) -> evaluate``.
        resolve: ``resolve(ids) -> {id: text}``: your store's texts.
        config: The engine configuration (None: the package default).
        trace_query: Reads a question from its run's trace when the ledger has no text.
        limit: At most this many challenges per call.
        quiet_seconds: After an ``upheld`` verdict, challenges of that question within
            this many seconds are covered by it (``settlement.pending_challenges``; None:
            the ledger's ``reverify_quiet_seconds``).

    Returns:
        One result, or the :class:`ReplayError` that stopped it, per challenge.
    """
    with read_transaction(ledger.engine) as conn:
        todo = pending_challenges(
            conn, ledger.namespace, limit=limit, quiet_seconds=quiet_of(ledger, quiet_seconds)
        )
    out: list[ReverifyResult | ReplayError] = []
    for run_id in todo:
        try:
            out.append(
                reverify_settlement(
                    ledger,
                    run_id,
                    evaluator_for=evaluator_for,
                    resolve=resolve,
                    config=config,
                    trace_query=trace_query,
                )
            )
        except ReplayError as exc:
            out.append(exc)
    return out


def quiet_of(ledger: HarmLedger, quiet_seconds: float | None = None) -> float:
    """``quiet_seconds``, else the ledger's ``reverify_quiet_seconds`` (else the default)."""
    if quiet_seconds is not None:
        return float(quiet_seconds)
    return float(getattr(ledger, "reverify_quiet_seconds", REVERIFY_QUIET_SECONDS))


def reinstate_settlement(
    ledger: HarmLedger,
    memory_id: str,
    *,
    query: str,
    content_hash: str,
    actor: str,
    reason: str,
    authority: str = "reviewer",
    run_id: str | None = None,
) -> None:
    """A reviewer's or an operator's reversal of a lift (``settlement.reinstate``).

    Args:
        ledger: The harm ledger.
        memory_id: The memory.
        query: The question it was settled for (the lifted row's).
        content_hash: The text it was settled on.
        actor: Who (audited).
        reason: Why (audited).
        authority: ``reviewer`` or ``operator``.
        run_id: The run they rely on, if any.

    Raises:
        ConfigurationError: Another authority, no actor or reason, or nothing settled there.
    """
    key = (str(memory_id), content_hash, ledger.query_id(query))
    with write_transaction(ledger.engine) as conn:
        reinstate(
            conn,
            ledger.namespace,
            key,
            at=ledger._now(),
            authority=authority,
            actor=actor,
            reason=reason,
            run_id=run_id,
        )
