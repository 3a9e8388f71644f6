"""The production loop over the query streams: no clearance, inline, or background audits.

``meclear bench --stream --mode inline|background`` runs one trigger policy over the
LoCoMo streams of :mod:`.stream_build` (SIMULATED world) on a simulated clock: query ``i``
of a conversation arrives at ``i * interval_seconds``; a model call takes ``call_seconds``.

- ``none``: the retrieved context as is.
- ``inline``: clearance on the request path through the one query flow
  (:func:`~meclear_integrations.pipeline.clearance_flow`, ledger-guided), as
  ``mode="clear"`` does. Added request latency is modelled: every engine round is an agent
  call then a judge call, ``2 * call_seconds`` (the round's calls run concurrently).
- ``background``: the request path of ``mode="background"``
  (:func:`~meclear_integrations.pipeline.background.background_flow`): it withholds the
  ledger's scoped verified harm and queues the audit in a real job table (SQLite, single
  flight); its added latency is *measured* (wall time of the ledger read and the enqueue).
  ``workers`` audit workers take the jobs in order; an audit runs the same flow with the
  job's snapshot and is recorded in the ledger (under the job id) when it finishes on the
  simulated clock, ``rounds * 2 * call_seconds`` after it started.

Per query: correctness on unseen trials, model calls and added latency on the request
path, audit calls. Per run: accuracy, time from a question's first wrong answer to its
first right one afterwards ("time to fix"), jobs submitted / joined / finished / lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from meclear_integrations.core.config import ClearanceConfig
from meclear_integrations.guard.live_bounds import LiveGuard
from meclear_integrations.judges.task import TaskCalls
from meclear_integrations.pipeline import FlowEvent, QuerySettings, clearance_flow, run_sync
from meclear_integrations.pipeline.audit import audit_outcome, audit_settings
from meclear_integrations.pipeline.background import background_flow
from meclear_integrations.pipeline.flow import EngineJob, make_gate
from meclear_integrations.pipeline.steps import Clear
from meclear_integrations.simulation import JudgeSignal, SimulatedQuery

from .stream_build import ConversationStream, StreamBuild, StreamQuery
from .stream_run import _correct, _evaluator, _world_flags, make_trigger

__all__ = ["LOOP_MODES", "LoopOutcome", "LoopRun", "LoopSettings", "classify_withheld", "run_loop"]

LoopMode = Literal["none", "inline", "background"]
_EPOCH = 1_767_225_600.0
"""2026-01-01T00:00:00Z: where the simulated clock starts for the audit bounds' days."""
LOOP_MODES: tuple[LoopMode, ...] = ("none", "inline", "background")


@dataclass(frozen=True)
class LoopSettings:
    """The simulated clock of the loop.

    Args:
        call_seconds: Latency of one model call.
        interval_seconds: Time between two queries of a conversation.
        workers: Background audit workers.
        reask: Background: re-asks of each query within its interval (a re-ask storm);
            they are not scored, only their audits are counted (``LoopRun.reask``).
        audit_bounds: Background: the per-question audit bounds
            (``jobs.audit_gate`` with the ``Loop`` defaults); False: every triggered
            ask submits (the queue's single flight only).
    """

    call_seconds: float = 0.5
    interval_seconds: float = 2.0
    workers: int = 1
    reask: int = 0
    audit_bounds: bool = True


class LoopOutcome(BaseModel):
    """One stream query under one loop mode."""

    model_config = ConfigDict(frozen=True)

    conversation: str
    position: int
    question: int
    kind: str
    time: float
    """Arrival on the simulated clock, seconds."""
    failing: bool
    """The full context answers wrongly."""
    correct: bool
    """The returned context answers correctly (unseen trials)."""
    request_calls: int
    """Model calls on the request path."""
    request_seconds: float
    """Latency added to the request path (inline: modelled; background: measured)."""
    audit_calls: int = 0
    """Model calls of the audit this query queued (background)."""
    withheld: list[str] = []
    """Memories withheld (background) or cleared (inline)."""
    off_topic: list[str] = []
    """Withheld memories whose harm was verified on an *unrelated* LoCoMo question: neither
    this one, nor a rewording of it, nor one about the same fact (gold evidence that
    overlaps this question's): the unscoped ledger's failure (target 0). Inline clearance
    verifies on the question itself, so it has none."""
    same_fact: list[str] = []
    """Withheld memories whose harm was verified on another LoCoMo question about the same
    fact (overlapping gold evidence; the stream's fault records about one are about the
    other, ``stream_build``): in scope by design, counted apart from :attr:`off_topic`."""


class LoopRun(BaseModel):
    """Every outcome of one loop mode, and its jobs."""

    mode: str
    policy: str
    settings: dict[str, Any]
    outcomes: list[LoopOutcome]
    jobs: dict[str, int] = {}
    """``submitted``, ``joined``, ``done``, ``dead``, ``lost`` (background)."""
    reask: dict[str, Any] = {}
    """Background: asks, audits and audit model calls per question (re-asks included):
    ``questions``, ``asks``, ``audits_max`` / ``audits_mean`` per question,
    ``audit_calls_mean`` per question; ``storms`` (stream queries, each asked ``reask + 1``
    times) and ``storm_audits_max`` / ``storm_audits_mean`` (audits one storm started)."""
    review: dict[str, Any] = {}
    """The ledgers' final review (``HarmLedger.review(min_queries=...)``): memories proposed
    for deletion, and ``true_proposed``: proposed memories that are not injected faults."""


class _Host:
    """Runs the engine on the stream query's simulated evaluator."""

    def __init__(self, evaluator: SimulatedQuery) -> None:
        self.evaluator = evaluator

    def notify(self, event: FlowEvent) -> None:
        pass

    def engine_job(self, request: Clear) -> EngineJob:
        return EngineJob(
            request,
            _Counted(self.evaluator),  # type: ignore[arg-type]  # reads .calls only
            self.evaluator,
            _ignore,
            _no_scope,
        )


@dataclass(frozen=True)
class _Counted:
    """The simulated evaluator's agent and judge calls, as an engine run reads a task's."""

    evaluator: SimulatedQuery

    @property
    def calls(self) -> TaskCalls:
        e = self.evaluator
        return TaskCalls(
            agent_calls=e.agent_calls, agent_hits=0, judge_calls=e.judge_calls, judge_hits=0
        )


def _ignore(event: object) -> None:
    return None


def _no_scope(cost: object) -> AbstractContextManager[None]:
    return nullcontext()


class _DeferredLedger:
    """The ledger as an audit sees it while it runs: writes wait for the simulated finish."""

    def __init__(self, ledger: Any) -> None:
        self.ledger = ledger
        self.pending: list[tuple[Any, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ledger, name)

    def record(self, report: Any, **kwargs: Any) -> Any:
        self.pending.append((report, kwargs))

        @dataclass
        class _Stored:
            run_id: str

        return _Stored(kwargs["run_id"])

    def flush(self) -> None:
        for report, kwargs in self.pending:
            self.ledger.record(report, **kwargs)
        self.pending.clear()


@dataclass(order=True)
class _Audit:
    finish: float
    job_id: str = field(compare=False)
    deferred: _DeferredLedger = field(compare=False)
    calls: int = field(compare=False)
    ledger_run_id: str | None = field(compare=False)


class _Loop:
    def __init__(
        self,
        mode: LoopMode,
        policy: str,
        *,
        engine: ClearanceConfig,
        ledger_dir: Path,
        settings: LoopSettings,
        seed: int,
        check_trials: int,
        judge: JudgeSignal,
        temperature: float | None,
        review_min_queries: int = 2,
    ) -> None:
        self.mode, self.policy, self.engine = mode, policy, engine
        self.review_min_queries = review_min_queries
        self.ledger_dir, self.settings, self.seed = ledger_dir, settings, seed
        self.check_trials, self.judge, self.temperature = check_trials, judge, temperature
        self.jobs = {"submitted": 0, "joined": 0, "done": 0, "dead": 0, "lost": 0}
        self.review: dict[str, Any] = {"proposed": [], "true_proposed": []}
        self.questions: dict[str, int] = {}
        """Ledger query id -> LoCoMo question (a question and its rewordings share one)."""
        self.evidence: dict[int, frozenset[str]] = {}
        """LoCoMo question -> its gold evidence (dialogue ids)."""
        self.audits: Any = None
        """Background: the per-question audit bounds (``jobs.audit_gate``)."""
        self.now = 0.0
        """The simulated clock (seconds), read by the audit bounds."""
        self.per_question: dict[tuple[str, int], list[int]] = {}
        """(conversation, question) -> [asks, audits, audit model calls]."""
        self.per_storm: dict[tuple[str, int], int] = {}
        """(conversation, stream position) -> audits started by that query and its re-asks."""

    def _evaluator(self, query: StreamQuery) -> SimulatedQuery:
        return _evaluator(query, self.judge, self.temperature, query.case.reference)

    def run_stream(self, stream: ConversationStream) -> list[LoopOutcome]:
        if self.mode == "none":
            return [self._none(stream, q) for q in stream.queries]
        from meclear_integrations.jobs.store import JobStore
        from meclear_integrations.ledger import HarmLedger

        path = self.ledger_dir / f"loop-{self.mode}-{self.policy.replace(':', '-')}.db"
        with HarmLedger(path, namespace=stream.conversation) as ledger:
            store = JobStore(ledger.url, namespace=stream.conversation)
            try:
                outcomes = self._stream(stream, ledger, store)
            finally:
                store.close()
            self._review(stream, ledger)
            return outcomes

    def _review(self, stream: ConversationStream, ledger: Any) -> None:
        """Add this stream's review proposals (``true``: not an injected fault record)."""
        faults = {f.memory_id for f in stream.faults}
        for proposal in ledger.review(min_queries=self.review_min_queries):
            name = f"{stream.conversation}:{proposal.memory_id}"
            self.review["proposed"].append(name)
            if proposal.memory_id not in faults:
                self.review["true_proposed"].append(name)

    def _stream(self, stream: ConversationStream, ledger: Any, store: Any) -> list[LoopOutcome]:
        gate = make_gate(make_trigger(self.policy, ledger, seed=self.seed), ledger)
        self.audits = None
        if self.mode == "background" and self.settings.audit_bounds:
            from meclear_integrations.jobs.audit_gate import AuditGate
            from meclear_integrations.pipeline.settings import Loop

            defaults = Loop()
            self.audits = AuditGate(
                ledger,
                store,
                per_day=defaults.audits_per_question_per_day,
                backoff_seconds=defaults.audit_backoff_seconds,
                pending_seconds=defaults.audit_pending_seconds,
                clock=lambda: _EPOCH + self.now,
            )
        by_position = {q.position: q for q in stream.queries}
        free = [0.0] * self.settings.workers
        running: list[_Audit] = []
        started: set[str] = set()
        outcomes = []
        for i, query in enumerate(stream.queries):
            now = i * self.settings.interval_seconds
            self.questions[ledger.query_id(query.case.query)] = query.question
            self.evidence[query.question] = frozenset(query.evidence)
            self._settle(running, store, now)
            signal = "judge" if self.judge.reference_free else "reference"
            settings = QuerySettings(self.engine, LiveGuard(None), gate, {"success_signal": signal})
            if self.mode == "inline":
                outcomes.append(self._inline(stream, query, settings, now))
                continue
            outcome, job = self._background(stream, query, settings, store, now)
            calls = self._audit(job, started, store, ledger, settings, by_position, free, running)
            self._count(stream, query, calls, job is not None and calls >= 0)
            outcomes.append(outcome.model_copy(update={"audit_calls": max(calls, 0)}))
            for j in range(self.settings.reask):  # the storm: the same question again
                at = now + (j + 1) * self.settings.interval_seconds / (self.settings.reask + 1)
                self._settle(running, store, at)
                _, job = self._background(stream, query, settings, store, at)
                calls = self._audit(
                    job, started, store, ledger, settings, by_position, free, running
                )
                self._count(stream, query, calls, job is not None and calls >= 0)
        self._settle(running, store, float("inf"))
        stats = store.stats()
        self.jobs["done"] += stats["done"]
        self.jobs["dead"] += stats["dead"]
        self.jobs["lost"] += stats["queued"] + stats["running"]
        return outcomes

    def _audit(
        self,
        job: str | None,
        started: set[str],
        store: Any,
        ledger: Any,
        settings: QuerySettings,
        by_position: dict[int, StreamQuery],
        free: list[float],
        running: list[_Audit],
    ) -> int:
        """Start the audit of a new job: its model calls (-1: no new audit started)."""
        if job is None or job in started:
            return -1
        started.add(job)
        audit = self._start(store, ledger, settings, by_position, free, self.now)
        if audit is None:
            return 0
        running.append(audit)
        return audit.calls

    def _count(
        self, stream: ConversationStream, query: StreamQuery, calls: int, audited: bool
    ) -> None:
        tally = self.per_question.setdefault((stream.conversation, query.question), [0, 0, 0])
        storm = self.per_storm.setdefault((stream.conversation, query.position), 0)
        tally[0] += 1
        if audited:
            tally[1] += 1
            tally[2] += calls
            self.per_storm[(stream.conversation, query.position)] = storm + 1

    def reask_summary(self) -> dict[str, Any]:
        """Asks, audits and audit calls per question (:attr:`LoopRun.reask`)."""
        tallies = list(self.per_question.values())
        if not tallies:
            return {}
        n = len(tallies)
        return {
            "reask": self.settings.reask,
            "audit_bounds": self.settings.audit_bounds,
            "questions": n,
            "asks": sum(t[0] for t in tallies),
            "audits_max": max(t[1] for t in tallies),
            "audits_mean": sum(t[1] for t in tallies) / n,
            "audit_calls_mean": sum(t[2] for t in tallies) / n,
            "storms": len(self.per_storm),
            "storm_audits_max": max(self.per_storm.values(), default=0),
            "storm_audits_mean": sum(self.per_storm.values()) / max(len(self.per_storm), 1),
        }

    def _none(self, stream: ConversationStream, query: StreamQuery) -> LoopOutcome:
        failing, _ = _world_flags(query, self.check_trials, self.temperature)
        return self._outcome(stream, query, 0.0, failing, not failing, 0, 0.0, [])

    def _outcome(
        self,
        stream: ConversationStream,
        query: StreamQuery,
        now: float,
        failing: bool,
        correct: bool,
        calls: int,
        seconds: float,
        withheld: list[str],
    ) -> LoopOutcome:
        return LoopOutcome(
            conversation=stream.conversation,
            position=query.position,
            question=query.question,
            kind=query.kind,
            time=now if self.mode != "none" else query.position * self.settings.interval_seconds,
            failing=failing,
            correct=correct,
            request_calls=calls,
            request_seconds=seconds,
            withheld=withheld,
        )

    def _inline(
        self, stream: ConversationStream, query: StreamQuery, settings: QuerySettings, now: float
    ) -> LoopOutcome:
        context = query.case.context()
        failing, _ = _world_flags(query, self.check_trials, self.temperature)
        evaluator = self._evaluator(query)
        flow = clearance_flow(query.case.query, len(context), lambda: context, settings)
        result = run_sync(flow, _Host(evaluator))
        report = result.report
        assert report is not None
        returned_ids = set(result.outcome.returned_ids if result.outcome else report.kept_ids)
        returned = [m for m in context if m.id in returned_ids]
        correct = _correct(query, returned, self.check_trials, self.temperature)
        seconds = report.cost.rounds * 2 * self.settings.call_seconds
        calls = evaluator.model_calls
        return self._outcome(
            stream, query, now, failing, correct, calls, seconds, report.cleared_ids
        )

    def _background(
        self,
        stream: ConversationStream,
        query: StreamQuery,
        settings: QuerySettings,
        store: Any,
        now: float,
    ) -> tuple[LoopOutcome, str | None]:
        context = query.case.context()
        failing, _ = _world_flags(query, self.check_trials, self.temperature)
        self.now = now
        flow = background_flow(
            query.case.query,
            len(context),
            lambda: context,
            settings,
            store,
            snapshot={"reference": query.case.reference, "answer": None},
            audits=self.audits,
        )
        started = time.perf_counter()
        result = run_sync(flow, _Host(self._evaluator(query)))
        seconds = time.perf_counter() - started
        decision = result.background
        withheld = set(decision.withheld_ids)
        proven_on = [
            (w.memory_id, self.questions.get(w.query_id or "", query.question))
            for w in decision.withheld
        ]
        off_topic, same_fact = classify_withheld(
            query.question, query.evidence, proven_on, self.evidence
        )
        returned = [m for m in context if m.id not in withheld]
        correct = _correct(query, returned, self.check_trials, self.temperature)
        job = decision.audit.job_id if decision.audit is not None else None
        if decision.audit is not None:
            self.jobs["joined" if decision.audit.joined else "submitted"] += 1
        outcome = self._outcome(stream, query, now, failing, correct, 0, seconds, sorted(withheld))
        update = {"off_topic": off_topic, "same_fact": same_fact}
        return outcome.model_copy(update=update), job

    def _start(
        self,
        store: Any,
        ledger: Any,
        settings: QuerySettings,
        by_position: dict[int, StreamQuery],
        free: list[float],
        now: float,
    ) -> _Audit | None:
        from meclear_integrations.jobs.snapshot import AuditSnapshot

        claimed = store.claim("bench", lease_seconds=1e9)
        if claimed is None:
            return None
        snapshot = AuditSnapshot.loads(claimed.payload)
        query = next(q for q in by_position.values() if q.case.query == snapshot.query)
        worker = min(range(len(free)), key=free.__getitem__)
        start = max(now, free[worker])
        deferred = _DeferredLedger(ledger)
        live = QuerySettings(
            settings.config, settings.guard, make_gate(None, deferred), settings.record
        )
        audit = audit_settings(live, snapshot, claimed.job_id)
        memories = [m.memory() for m in snapshot.memories]
        evaluator = self._evaluator(query)
        flow = clearance_flow(snapshot.query, len(memories), lambda: memories, audit)
        result = run_sync(flow, _Host(evaluator))
        outcome = audit_outcome(result)
        rounds = result.report.cost.rounds if result.report is not None else 0
        finish = start + rounds * 2 * self.settings.call_seconds
        free[worker] = finish
        if outcome.state != "done":
            store.dead(claimed.job_id, reason=str(outcome.reason))
            return None
        return _Audit(
            finish, claimed.job_id, deferred, evaluator.model_calls, outcome.ledger_run_id
        )

    @staticmethod
    def _settle(running: list[_Audit], store: Any, now: float) -> None:
        running.sort()
        while running and running[0].finish <= now:
            audit = running.pop(0)
            audit.deferred.flush()
            store.complete(audit.job_id, ledger_run_id=audit.ledger_run_id)


def classify_withheld(
    question: int,
    evidence: Iterable[str],
    proven_on: Iterable[tuple[str, int]],
    evidence_of: Mapping[int, Iterable[str]],
) -> tuple[list[str], list[str]]:
    """Split one query's withheld memories into off-topic and same-fact (:class:`LoopOutcome`).

    Args:
        question: The query's LoCoMo question.
        evidence: Its gold evidence (dialogue ids).
        proven_on: (memory id, LoCoMo question its harm was verified on) per withheld memory.
        evidence_of: LoCoMo question -> its gold evidence.

    Returns:
        (off_topic, same_fact) memory ids, sorted: proven on an unrelated question, and
        proven on another question about the same fact (overlapping evidence). Memories
        proven on this question (or a rewording of it) are in neither.
    """
    mine = set(evidence)
    off_topic, same_fact = [], []
    for memory_id, other in proven_on:
        if other == question:
            continue
        if mine & set(evidence_of.get(other, ())):
            same_fact.append(memory_id)
        else:
            off_topic.append(memory_id)
    return sorted(off_topic), sorted(same_fact)


def run_loop(
    build: StreamBuild,
    mode: LoopMode,
    policy: str,
    *,
    engine: ClearanceConfig,
    ledger_dir: Path,
    settings: LoopSettings | None = None,
    seed: int = 0,
    check_trials: int = 3,
    judge: JudgeSignal | None = None,
    temperature: float | None = None,
    progress: Callable[[int], None] | None = None,
    review_min_queries: int = 2,
) -> LoopRun:
    """Run one loop mode over every stream (module docstring).

    Args:
        build: The streams.
        mode: ``none``, ``inline`` or ``background``.
        policy: The trigger policy's spec (``stream_run.make_trigger``).
        engine: The engine configuration.
        ledger_dir: Where the ledgers and job tables are written (fresh per run).
        settings: The simulated clock (default :class:`LoopSettings`).
        seed: The seed of sampling policies.
        check_trials: Fresh trials per query to score its returned context.
        judge: The success signal (None: the reference judge).
        temperature: The simulated reader's temperature (None: the cases').
        progress: Called with the number of queries done.
        review_min_queries: ``min_queries`` of the final review of each ledger.

    Returns:
        The run.
    """
    settings = settings or LoopSettings()
    ledger_dir.mkdir(parents=True, exist_ok=True)
    for stale in ledger_dir.glob(f"loop-{mode}-{policy.replace(':', '-')}.db*"):
        stale.unlink()
    loop = _Loop(
        mode,
        policy,
        engine=engine,
        ledger_dir=ledger_dir,
        settings=settings,
        seed=seed,
        check_trials=check_trials,
        judge=judge if judge is not None else JudgeSignal(),
        temperature=temperature,
        review_min_queries=review_min_queries,
    )
    outcomes: list[LoopOutcome] = []
    for stream in build.streams:
        done = loop.run_stream(stream)
        outcomes.extend(done)
        if progress is not None:
            progress(len(done))
    return LoopRun(
        mode=mode,
        policy=policy,
        settings={
            "call_seconds": settings.call_seconds,
            "interval_seconds": settings.interval_seconds,
            "workers": settings.workers,
            "reask": settings.reask,
            "audit_bounds": settings.audit_bounds,
        },
        outcomes=outcomes,
        jobs=dict(loop.jobs) if mode == "background" else {},
        reask=loop.reask_summary() if mode == "background" else {},
        review=loop.review if mode != "none" else {},
    )


def time_to_fix(outcomes: Sequence[LoopOutcome]) -> dict[str, Any]:
    """Seconds from a question's first wrong answer to its first right one afterwards.

    Args:
        outcomes: One mode's outcomes.

    Returns:
        ``fixed`` / ``never_fixed`` question counts, ``median`` and ``mean`` seconds.
    """
    first_wrong: dict[tuple[str, int], float] = {}
    fixed: dict[tuple[str, int], float] = {}
    for o in sorted(outcomes, key=lambda o: (o.conversation, o.time)):
        key = (o.conversation, o.question)
        if not o.correct and key not in first_wrong:
            first_wrong[key] = o.time
        elif o.correct and key in first_wrong and key not in fixed:
            fixed[key] = o.time - first_wrong[key]
    values = sorted(fixed.values())
    median = values[len(values) // 2] if values else None
    mean = sum(values) / len(values) if values else None
    return {
        "fixed": len(values),
        "never_fixed": len(first_wrong) - len(values),
        "median_seconds": median,
        "mean_seconds": mean,
    }


def loop_summary(run: LoopRun) -> dict[str, Any]:
    """Accuracy, request-path cost and latency, time to fix and jobs of one run.

    Args:
        run: The run.

    Returns:
        The summary (JSON-ready).
    """
    out = run.outcomes
    n = len(out) or 1
    latencies = sorted(o.request_seconds for o in out)
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] if latencies else 0.0
    return {
        "mode": run.mode,
        "policy": run.policy,
        "queries": len(out),
        "accuracy": sum(o.correct for o in out) / n,
        "failing_share": sum(o.failing for o in out) / n,
        "request_model_calls": sum(o.request_calls for o in out),
        "request_seconds_mean": sum(latencies) / n,
        "request_seconds_p99": p99,
        "audit_model_calls": sum(o.audit_calls for o in out),
        "time_to_fix": time_to_fix(out),
        "off_topic_withheld": sum(len(o.off_topic) for o in out),
        "same_fact_withheld": sum(len(o.same_fact) for o in out),
        "review": run.review,
        "jobs": run.jobs,
        "reask": run.reask,
        "settings": run.settings,
    }
