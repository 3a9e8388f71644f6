"""Run one method under one trigger policy over the query streams, ledger on.

Every query goes through :class:`~meclear_integrations.guard.gate.ClearanceGate` exactly as an
integration does: the trigger decides before any model call, the ledger offers its
verified harm as the engine's prior candidate (method ``meclear+ledger``; ``meclear``
records to its ledger but clears cold), the decision is recorded. Each configuration has
its own SQLite ledger file (namespace = conversation), kept for ``meclear ledger review``.

Methods: ``none`` (no clearance), ``meclear`` (cold clearance on every triggered query),
``meclear+ledger`` (ledger-guided repeat clearances). Policies (``make_trigger``):
``always`` (attribution on every query: early exit off), ``judge`` (``WhenJudgeFails``),
``sample:R`` (``Sampling``), ``every:N`` (``EveryN``), ``feedback``
(``OnNegativeFeedback``), ``known+feedback`` (``OnKnownHarm | OnNegativeFeedback``).

Simulated user feedback (policies with ``feedback``): after each answer the user says with
probability ``feedback_rate`` whether it was right, giving the reference as the correction
when it was not; a negative feedback is replayed at once (``ledger.replay_feedback``), its
model calls counted as *offline* calls of that query.

Costs are the model calls a user pays: the agent and judge calls of the query's simulated
evaluator (:class:`~meclear_integrations.simulation.SimulatedQuery`, deduplicated per query
as the package's answer cache does). The success signal is a simulated judge (``judge``:
``reference``, ``noisy:E``, ``full:Q``, ``coalition``; see ``simulation.judging``), and
``temperature`` makes the world's reader sample; feedback replays always judge against the
person's correction. Correctness and recovery are measured against the reference on the
returned context with trials no method saw (uncounted).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from meclear_integrations.core.config import ClearanceConfig
from meclear_integrations.core.engine import MeClearEngine
from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.core.memory import Memory
from meclear_integrations.guard.gate import ClearanceGate
from meclear_integrations.simulation import JudgeSignal, SimulatedEvaluator, SimulatedQuery
from meclear_integrations.triggers import (
    Always,
    EveryN,
    OnKnownHarm,
    OnNegativeFeedback,
    Sampling,
    Trigger,
    WhenJudgeFails,
)

from .stream_build import ConversationStream, StreamBuild, StreamQuery

__all__ = [
    "METHODS",
    "ConfigRun",
    "QueryOutcome",
    "ReviewOutcome",
    "make_trigger",
    "run_config",
]

METHODS = ("none", "meclear", "meclear+ledger")
UNSEEN_TRIAL = 1_000_003
"""First trial index of the correctness check (no method evaluates these)."""
Method = Literal["none", "meclear", "meclear+ledger"]


def make_trigger(spec: str, ledger: Any, *, seed: int) -> Trigger:
    """The trigger policy named by ``spec`` (module docstring).

    Args:
        spec: ``always``, ``judge``, ``sample:R``, ``every:N``, ``feedback`` or
            ``known+feedback``.
        ledger: The ledger the feedback and known-harm policies read.
        seed: The sampling seed.

    Returns:
        The policy.

    Raises:
        ConfigurationError: The spec names no policy.
    """
    name, _, arg = spec.partition(":")
    if name == "always":
        return Always(early_exit=False)
    if name == "judge":
        return WhenJudgeFails()
    if name == "sample":
        return Sampling(float(arg or 0.25), seed=seed)
    if name == "every":
        return EveryN(int(arg or 4))
    if name == "feedback":
        return OnNegativeFeedback(ledger)
    if name == "known+feedback":
        return OnKnownHarm(ledger) | OnNegativeFeedback(ledger)
    raise ConfigurationError(
        f"unknown trigger policy {spec!r}: always, judge, sample:R, every:N, feedback, "
        "known+feedback"
    )


def uses_feedback(spec: str) -> bool:
    """Whether the policy ``spec`` reads feedback (then the stream gives feedback).

    Args:
        spec: The policy's spec.

    Returns:
        True for ``feedback`` policies.
    """
    return "feedback" in spec


class QueryOutcome(BaseModel):
    """What happened to one stream query under one configuration."""

    model_config = ConfigDict(frozen=True)

    conversation: str
    """The LoCoMo conversation."""
    position: int
    """Index in the conversation's stream."""
    question: int
    """LoCoMo index of the underlying question."""
    kind: str
    """The query's kind in the stream (:data:`~.stream_build.QueryKind`)."""
    fault_ids: list[str]
    """Fault records in the context that claim a wrong answer for this query."""
    failing: bool
    """The full context answers wrongly (on unseen trials)."""
    recoverable: bool
    """Removing ``fault_ids`` makes it answer correctly (what an oracle could do)."""
    warm: bool
    """A fault of ``fault_ids`` had a verified clearance in this configuration's ledger
    before this query."""
    triggered: bool
    """The trigger policy ran clearance."""
    mode: str
    """How the decision was reached (the ledger's run mode; ``none`` without clearance)."""
    evaluator_calls: int
    """Evaluator calls of the clearance."""
    model_calls: int
    """Agent and judge calls of the clearance."""
    offline_calls: int = 0
    """Model calls of the feedback replay this query's answer caused (policy feedback)."""
    cleared: list[str] = Field(default_factory=list)
    """Ids the clearance removed."""
    correct: bool
    """The returned context answers correctly on unseen trials."""


class ReviewOutcome(BaseModel):
    """``review(min_queries=N)`` of one conversation against its injected faults."""

    model_config = ConfigDict(frozen=True)

    conversation: str
    """The LoCoMo conversation."""
    proposed: list[str]
    """Ids the review proposed."""
    faults: list[str]
    """Ids of the conversation's injected faults."""
    eligible: list[str]
    """Fault records retrieved, about the query and failing it, for >= N distinct questions
    (rewordings of one question, alike under ``ledger.scope``, are one question)."""


class ConfigRun(BaseModel):
    """Every query outcome and review of one (method, policy) configuration."""

    method: str
    """``none``, ``meclear`` or ``meclear+ledger``."""
    policy: str
    """The trigger policy's spec."""
    outcomes: list[QueryOutcome]
    """One outcome per stream query, in stream order."""
    reviews: list[ReviewOutcome] = Field(default_factory=list)
    """One review per conversation (ledger methods)."""
    ledger_path: str | None = None
    """The directory of the conversations' ledgers, if any."""


def _world(query: StreamQuery, temperature: float | None) -> Any:
    world = query.case.world
    if temperature is None:
        return world
    return world.model_copy(update={"temperature": temperature})


def _correct(
    query: StreamQuery, returned: Sequence[Memory], trials: int, temperature: float | None
) -> bool:
    """The reference judges the returned context on trials no method saw."""
    evaluate = SimulatedEvaluator(
        _world(query, temperature), query.case.reference, case_id=query.case.case_id
    )
    return all(evaluate(tuple(returned), UNSEEN_TRIAL + t) >= 1.0 for t in range(trials))


def _world_flags(query: StreamQuery, trials: int, temperature: float | None) -> tuple[bool, bool]:
    context = query.case.context()
    failing = not _correct(query, context, trials, temperature)
    faults = set(query.fault_ids)
    kept = [m for m in context if m.id not in faults]
    recoverable = failing and _correct(query, kept, trials, temperature)
    return failing, recoverable


def _evaluator(
    query: StreamQuery, signal: JudgeSignal, temperature: float | None, reference: str
) -> SimulatedQuery:
    return SimulatedQuery(
        _world(query, temperature),
        reference,
        case_id=query.case.case_id,
        context_ids=[m.id for m in query.case.memories],
        signal=signal,
    )


class _Runner:
    def __init__(
        self,
        method: Method,
        policy: str,
        *,
        engine: ClearanceConfig,
        ledger_path: Path | None,
        feedback_rate: float,
        seed: int,
        check_trials: int,
        judge: JudgeSignal,
        temperature: float | None,
    ) -> None:
        self.judge = judge
        self.temperature = temperature
        self.method = method
        self.policy = policy
        self.engine = engine
        self.ledger_path = ledger_path
        self.feedback_rate = feedback_rate
        self.seed = seed
        self.check_trials = check_trials
        self.rng = random.Random(seed)

    def run_stream(self, stream: ConversationStream) -> list[QueryOutcome]:
        if self.method == "none":
            return [self._none(stream, q) for q in stream.queries]
        from meclear_integrations.ledger import HarmLedger

        assert self.ledger_path is not None
        with HarmLedger(self.ledger_path, namespace=stream.conversation) as ledger:
            gate = ClearanceGate(
                trigger=make_trigger(self.policy, ledger, seed=self.seed),
                ledger=ledger,
                shortcut=self.method == "meclear+ledger",
                origin="bench",
            )
            return [self._query(stream, q, ledger, gate) for q in stream.queries]

    def _none(self, stream: ConversationStream, query: StreamQuery) -> QueryOutcome:
        failing, recoverable = _world_flags(query, self.check_trials, self.temperature)
        return QueryOutcome(
            conversation=stream.conversation,
            position=query.position,
            question=query.question,
            kind=query.kind,
            fault_ids=query.fault_ids,
            failing=failing,
            recoverable=recoverable,
            warm=False,
            triggered=False,
            mode="none",
            evaluator_calls=0,
            model_calls=0,
            correct=not failing,
        )

    def _query(
        self, stream: ConversationStream, query: StreamQuery, ledger: Any, gate: ClearanceGate
    ) -> QueryOutcome:
        context = query.case.context()
        failing, recoverable = _world_flags(query, self.check_trials, self.temperature)
        known = (  # the harm the scoped ledger offers this question
            set(ledger.prior_harmful(context, query=query.case.query)) if query.fault_ids else set()
        )
        plan = gate.plan(query.case.query, context, self.engine)
        evaluator = _evaluator(query, self.judge, self.temperature, query.case.reference)
        if plan.run:
            engine = MeClearEngine(plan.config)
            report = engine.clear(context, evaluator, prior_harmful=plan.prior)
        else:
            report = gate.skipped(plan)
        calls = evaluator.model_calls
        signal = "judge" if self.judge.reference_free else "reference"
        outcome = gate.finish(plan, report, success_signal=signal, model_calls=calls)
        returned = [m for m in report.kept if m.id in set(outcome.returned_ids)]
        correct = _correct(query, returned, self.check_trials, self.temperature)
        offline = 0
        if uses_feedback(self.policy) and outcome.ledger_run_id and self._gives_feedback():
            offline = self._feedback(ledger, query, outcome.ledger_run_id, correct)
        return QueryOutcome(
            conversation=stream.conversation,
            position=query.position,
            question=query.question,
            kind=query.kind,
            fault_ids=query.fault_ids,
            failing=failing,
            recoverable=recoverable,
            warm=bool(known & set(query.fault_ids)),
            triggered=plan.run,
            mode=_mode(report),
            evaluator_calls=report.cost.evaluator_calls,
            model_calls=calls,
            offline_calls=offline,
            cleared=report.cleared_ids,
            correct=correct,
        )

    def _gives_feedback(self) -> bool:
        return self.rng.random() < self.feedback_rate

    def _feedback(self, ledger: Any, query: StreamQuery, run_id: str, correct: bool) -> int:
        from meclear_integrations.ledger import replay_feedback

        feedback = ledger.feedback(
            run_id,
            correct=correct,
            correction=None if correct else query.case.reference,
            source="simulated-user",
        )
        if correct:
            return 0
        used: list[SimulatedQuery] = []

        def evaluator_for(text: str, reference: str, memories: list[Memory]) -> Callable:
            used.append(_evaluator(query, JudgeSignal(), self.temperature, reference))
            return used[-1]

        texts = {m.id: m.text for m in query.case.memories}
        replay_feedback(
            ledger,
            feedback,
            evaluator_for=evaluator_for,
            query=query.case.query,
            resolve=lambda ids: {i: texts[i] for i in ids},
            config=self.engine,
        )
        return sum(q.model_calls for q in used)


def _mode(report: Any) -> str:
    from meclear_integrations.ledger.rows import run_mode

    return run_mode(report)


def review_stream(
    ledger_path: Path, stream: ConversationStream, outcomes: Sequence[QueryOutcome], n: int
) -> ReviewOutcome:
    """Review one conversation's ledger against its injected faults.

    Args:
        ledger_path: The conversation's ledger.
        stream: The conversation's stream.
        outcomes: The queries' outcomes.
        n: The number of proposals reviewed.

    Returns:
        The review's outcome against the injected faults.
    """
    from meclear_integrations.ledger import HarmLedger
    from meclear_integrations.ledger.scope import content_tokens

    with HarmLedger(ledger_path, namespace=stream.conversation, create=False) as ledger:
        proposed = [p.memory_id for p in ledger.review(min_queries=n)]
    texts = {q.position: q.case.query for q in stream.queries}
    seen: dict[str, set[frozenset[str]]] = {}
    for o in outcomes:
        if o.failing:  # distinct questions: a template rewording is the same question
            for fid in o.fault_ids:
                seen.setdefault(fid, set()).add(content_tokens(texts[o.position]))
    return ReviewOutcome(
        conversation=stream.conversation,
        proposed=proposed,
        faults=[f.memory_id for f in stream.faults],
        eligible=sorted(fid for fid, queries in seen.items() if len(queries) >= n),
    )


def run_config(
    build: StreamBuild,
    method: Method,
    policy: str,
    *,
    engine: ClearanceConfig,
    ledger_dir: Path,
    feedback_rate: float = 0.5,
    review_min_queries: int = 2,
    seed: int = 0,
    check_trials: int = 3,
    judge: JudgeSignal | None = None,
    temperature: float | None = None,
    progress: Callable[[int], None] | None = None,
) -> ConfigRun:
    """Run ``method`` under ``policy`` over every stream (module docstring).

    Args:
        build: The streams (one per LoCoMo conversation).
        method: ``none``, ``meclear`` or ``meclear+ledger``.
        policy: The trigger policy's spec (:func:`make_trigger`).
        engine: The engine configuration.
        ledger_dir: Where each conversation's ledger is written.
        feedback_rate: The share of wrong answers that get feedback.
        review_min_queries: ``review``'s ``min_queries``.
        seed: The seed of feedback, sampling and the simulated world.
        check_trials: Fresh trials per query to score its returned context.
        judge: The success signal (None: the reference judge).
        temperature: The simulated reader's temperature (None: the cases').
        progress: Called with the number of queries done.

    Returns:
        The configuration's outcomes per query, its reviews and its cost.

    Raises:
        ConfigurationError: The method or the policy is unknown.
    """
    if method not in METHODS:
        raise ConfigurationError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    if method != "none":
        make_trigger(policy, None, seed=seed)  # validate the spec up front
    path: Path | None = None
    if method != "none":
        ledger_dir.mkdir(parents=True, exist_ok=True)
        path = ledger_dir / f"{method}__{policy.replace(':', '-')}.db"
        for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            stale.unlink(missing_ok=True)
    runner = _Runner(
        method,
        policy,
        engine=engine,
        ledger_path=path,
        feedback_rate=feedback_rate,
        seed=seed,
        check_trials=check_trials,
        judge=judge if judge is not None else JudgeSignal(),
        temperature=temperature,
    )
    outcomes: list[QueryOutcome] = []
    reviews: list[ReviewOutcome] = []
    for stream in build.streams:
        done = runner.run_stream(stream)
        outcomes.extend(done)
        if path is not None:
            reviews.append(review_stream(path, stream, done, review_min_queries))
        if progress is not None:
            progress(len(done))
    return ConfigRun(
        method=method,
        policy=policy,
        outcomes=outcomes,
        reviews=reviews,
        ledger_path=str(path) if path else None,
    )
