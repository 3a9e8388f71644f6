"""ConMemAdmitter: counterfactual admission of one candidate memory (Sec. 4, App. B).

The method is written once, as a generator of steps (run these independent model calls, emit this
stage event); a sync driver (daemon worker threads, :mod:`~..core.concurrency.workers`) and an async
driver (asyncio) execute the steps, so independent calls (the six responses, the three judge and
three auditor calls, targeted repairs) run concurrently on both paths, up to ``max_concurrency``. On
the async path the first error of a batch cancels its siblings
(:func:`~..core.concurrency.workers.gather_or_cancel`), so no call outlives the decision. Model
misbehaviour (a raising call, an output that never parses, however malformed: deep
nesting, huge numbers) never raises out of ``decide`` / ``adecide``: it ends in
``AdmissionDecision.error``. Error texts and raw outputs kept for diagnosis are redacted.

References:
    ConMem (Ji, Chen et al., 2026, arXiv:2610.33432), Sec. 4 and Appendix B.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from ..core.concurrency.step_driver import (
    Call,
    Steps,
    arun_steps,
    call_async,
    call_sync,
    run_steps,
)
from ..core.concurrency.workers import gather_or_cancel, map_in_workers
from ..core.redaction import redact
from ..runtime.limiter import CallLimiter
from .calls import CallMeter, CallResult, CallRunner, ModelCall
from .config import AdmissionConfig
from .decision import (
    AdmissionCost,
    AdmissionDecision,
    ProbeEvaluation,
    ProbeRound,
    ReasonClassification,
    StageError,
)
from .errors import CandidateTypeError
from .events import AdmissionEvent, AdmissionListener, AdmissionStage
from .known_harm import HarmIndex, HarmMatchLike, KnownHarm, known_harm
from .labels import PROBE_ROLES, ProbeRole
from .model import TextModel, as_text_model
from .prompts import (
    Context,
    render_context,
)
from .scoring import (
    cmte,
    unit_score,
)
from .stages import AdmissionStages, Probes, _Batch, _Emit, _Gen, _stage_payload
from .validation import validate_write

__all__ = ["AdmissionRequest", "ConMemAdmitter"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    """One candidate for batch admission."""

    candidate: str
    context: Context
    candidate_id: str | None = None


class ConMemAdmitter(AdmissionStages):
    """Decides store / do-not-store for candidate memories by counterfactual probing.

    ``model`` is any :class:`~meclear_integrations.admission.model.TextModel` (or a plain
    function ``prompt -> str``); every stage uses it. ``decide`` / ``adecide`` never raise
    for model misbehaviour: a stage that fails after its bounded retries is reported in
    ``AdmissionDecision.error`` with ``decision=None``.

    Args:
        model: The text model of every stage (or a function ``prompt -> str``).
        config: The admission configuration (weights, retries, seed).
        listener: Called with an :class:`AdmissionEvent` per stage.
        limiter: Bounds the model calls in flight, across decisions and with any other
            component given the same :class:`~meclear_integrations.runtime.limiter.CallLimiter`;
            None: each decision bounds only its own (``config.max_concurrency``).
        harm_index: Looks every candidate up among the memories the harm ledger verified
            harmful, before any model call (``ledger.content.LedgerHarmIndex``); a match is
            rejected or flagged (``config.on_known_harm`` / ``on_near_duplicate_harm``,
            :mod:`~meclear_integrations.admission.known_harm`). None: no lookup.

    Example:
        >>> from meclear_integrations.admission import ConMemAdmitter
        >>> from meclear_integrations.admission.scripted import ScriptedAdmissionModel
        >>> admitter = ConMemAdmitter(ScriptedAdmissionModel())  # SCRIPTED, not an LLM
        >>> context = "user: I'm allergic to shellfish, never suggest shrimp dishes to me."
        >>> admitter.decide("User is allergic to shellfish.", context).decision
        'store'
    """

    def __init__(
        self,
        model: TextModel | Callable[[str], str | Awaitable[str]],
        config: AdmissionConfig | None = None,
        *,
        listener: AdmissionListener | None = None,
        limiter: CallLimiter | None = None,
        harm_index: HarmIndex | None = None,
    ) -> None:
        self.model = as_text_model(model)
        self.config = config if config is not None else AdmissionConfig()
        self.listener = listener
        self.limiter = limiter
        self.harm_index = harm_index

    # ------------------------------------------------------------------ drivers
    def decide(
        self,
        candidate: str,
        context: Context,
        *,
        candidate_id: str | None = None,
        limiter: CallLimiter | None = None,
    ) -> AdmissionDecision:
        """Admission decision for ``candidate`` given its historical ``context`` (sync).

        Args:
            candidate: The candidate memory's text.
            context: Its historical context (text or ``{"role", "content"}`` turns).
            candidate_id: The candidate's id in the decision.
            limiter: Bounds this decision's model calls (None: the admitter's ``limiter``).

        Returns:
            The decision, with the probe evidence, CMTE, reason and cost.

        Raises:
            InvalidCandidateError: The candidate or context cannot be admitted (empty,
                not text, too long, malformed): raised before any model call.
        """
        runner = self._runner(limiter)
        handle = functools.partial(self._handle_sync, runner)
        return run_steps(self._deciding(candidate, context, candidate_id, runner), handle)

    async def adecide(
        self,
        candidate: str,
        context: Context,
        *,
        candidate_id: str | None = None,
        limiter: CallLimiter | None = None,
    ) -> AdmissionDecision:
        """Admission decision on the event loop; independent calls run concurrently.

        The steps of :meth:`decide` (one flow), with its arguments, result and errors: the
        model calls run as tasks, the ledger lookup in a worker thread.
        """
        runner = self._runner(limiter)
        semaphore = asyncio.Semaphore(self.config.max_concurrency)
        handle = functools.partial(self._handle_async, runner, semaphore)
        return await arun_steps(self._deciding(candidate, context, candidate_id, runner), handle)

    def _runner(self, limiter: CallLimiter | None) -> CallRunner:
        """A decision's call runner, metering its calls (``limiter``: else the admitter's)."""
        return CallRunner(self.model, self.config, CallMeter(), limiter=limiter or self.limiter)

    def _deciding(
        self, candidate: str, context: Context, candidate_id: str | None, runner: CallRunner
    ) -> Steps[AdmissionDecision]:
        """:meth:`decide`'s steps, one flow for both paths (``core.concurrency.step_driver``).

        The ledger lookup (a worker thread on the loop), then the algorithm's call batches
        and stage events (:meth:`_handle_sync` / :meth:`_handle_async`).
        """
        self.validate(candidate, context, candidate_id=candidate_id)
        started = time.perf_counter()
        found = None
        if self.harm_index is not None:
            found = yield Call(
                functools.partial(self.harm_index.known_harm, candidate, candidate_id)
            )
        harm = self._known(found)
        if harm is not None and harm.action == "rejected":
            return self._rejected_as_harmful(candidate, candidate_id, harm, started)
        algorithm = self._algorithm(candidate, render_context(context), candidate_id, runner.meter)
        decision = yield from algorithm
        return _flagged(decision, harm)

    def validate(
        self,
        candidate: Any,
        context: Any,
        *,
        candidate_id: Any = None,
        prefix: str | None = None,
        candidate_field: str = "candidate",
        context_field: str = "context",
    ) -> str:
        """Check a write before any model call (``admission.validation``).

        Args:
            candidate: The candidate memory.
            context: Its historical context.
            candidate_id: The caller's id (None or text).
            prefix: The batch item the fields belong to (``documents[2]``).
            candidate_field: The candidate's name in errors (``page_content``...).
            context_field: The context's name in errors.

        Returns:
            The candidate.

        Raises:
            CandidateTypeError: The candidate, the context or the id is not text.
            InvalidCandidateError: Empty, too long (``config.max_candidate_chars`` /
                ``max_context_chars``) or malformed.
        """
        if candidate_id is not None and not isinstance(candidate_id, str):
            error = CandidateTypeError(
                "candidate_id", "not_text", f"expected text, got {type(candidate_id).__name__}"
            )
            raise error if prefix is None else error.at(prefix)
        return validate_write(
            candidate,
            context,
            max_candidate_chars=self.config.max_candidate_chars,
            max_context_chars=self.config.max_context_chars,
            prefix=prefix,
            candidate_field=candidate_field,
            context_field=context_field,
        )

    def _known(self, found: HarmMatchLike | None) -> KnownHarm | None:
        if found is None:
            return None
        cfg = self.config
        return known_harm(found, on_exact=cfg.on_known_harm, on_near=cfg.on_near_duplicate_harm)

    def _rejected_as_harmful(
        self, candidate: str, candidate_id: str | None, harm: KnownHarm, started: float
    ) -> AdmissionDecision:
        """Do-not-store with the ledger's evidence, no model call (``known_harm``)."""
        wall = time.perf_counter() - started
        return AdmissionDecision(
            candidate=candidate,
            candidate_id=candidate_id,
            decision="do_not_store",
            explanation=harm.reason(),
            cost=AdmissionCost(
                model_calls=0,
                failed_attempts=0,
                calls_by_stage={},
                latency_seconds=0.0,
                wall_seconds=wall,
            ),
            config=self.config,
            known_harm=harm,
        )

    def decide_many(self, requests: Iterable[AdmissionRequest]) -> list[AdmissionDecision]:
        """Decisions for several candidates, one after the other (sync).

        Args:
            requests: The candidates with their contexts.

        Returns:
            One decision per request, in order.
        """
        return [self.decide(r.candidate, r.context, candidate_id=r.candidate_id) for r in requests]

    async def adecide_many(
        self, requests: Iterable[AdmissionRequest], *, max_concurrent_candidates: int = 4
    ) -> list[AdmissionDecision]:
        """Decisions for several candidates, up to ``max_concurrent_candidates`` at once.

        Args:
            requests: The candidates with their contexts.
            max_concurrent_candidates: Candidates decided at once.

        Returns:
            One decision per request, in order.
        """
        gate = asyncio.Semaphore(max(1, max_concurrent_candidates))

        async def one(r: AdmissionRequest) -> AdmissionDecision:
            async with gate:
                return await self.adecide(r.candidate, r.context, candidate_id=r.candidate_id)

        return await gather_or_cancel(one(r) for r in requests)

    def _handle_sync(self, runner: CallRunner, step: Any) -> Any:
        """One step on the calling thread: a batch in worker threads, an event, a call."""
        if isinstance(step, _Batch):
            return map_in_workers(runner.run, list(step.calls), self.config.max_concurrency)
        if isinstance(step, _Emit):
            return run_steps(self._emitting(step.event))
        return call_sync(step)

    async def _handle_async(
        self, runner: CallRunner, semaphore: asyncio.Semaphore, step: Any
    ) -> Any:
        """One step on the loop: a batch's calls as tasks under ``semaphore``, an event, a call."""
        if isinstance(step, _Batch):

            async def one(call: ModelCall) -> CallResult:
                async with semaphore:
                    return await runner.arun(call)

            return await gather_or_cancel(one(c) for c in step.calls)
        if isinstance(step, _Emit):
            return await arun_steps(self._emitting(step.event))
        return await call_async(step)

    def _emitting(self, event: AdmissionEvent) -> Steps[None]:
        """The listener's call as a step flow (either driver).

        What the listener returns to await is one step: awaited on the loop; on the sync
        path a coroutine is closed with a warning. An ``Exception`` it raises is logged,
        never raised.
        """
        if self.listener is None:
            return
        try:
            result = self.listener(event)
            if inspect.isawaitable(result):
                awaitable = result
                yield Call(functools.partial(_ignored, awaitable), lambda: awaitable)
        except Exception:
            logger.exception("admission listener failed on %s/%s", event.stage, event.phase)

    # ------------------------------------------------------------------ method
    def _algorithm(
        self, candidate: str, context: str, candidate_id: str | None, meter: CallMeter
    ) -> _Gen:
        started = time.perf_counter()
        cfg = self.config
        rounds: list[ProbeRound] = []
        evaluations: list[ProbeEvaluation] = []

        def finish(**fields: Any) -> AdmissionDecision:
            return AdmissionDecision(
                candidate=candidate,
                candidate_id=candidate_id,
                probe_rounds=rounds,
                probes=evaluations,
                cost=meter.cost(time.perf_counter() - started),
                config=cfg,
                **fields,
            )

        # Stage 1 (Sec. 4.2, App. B.1-B.2): probe triplet, validation, bounded repair.
        probes = yield from self._stage(
            "probes", candidate_id, self._probe_stage(candidate, context, rounds)
        )
        if isinstance(probes, StageError):
            return finish(decision=None, error=probes)

        # Stages 2-3 (Sec. 4.3-4.4, App. B.3-B.5): control and treatment differ only by
        # memory access; a blind judge and an attribution auditor evaluate each pair. With
        # ``irrelevant_probe`` other than "always", the irrelevant probe runs only when the
        # other two leave the decision open.
        first: tuple[ProbeRole, ...] = (
            tuple(PROBE_ROLES) if cfg.irrelevant_probe == "always" else ("relevant", "risk")
        )
        outcome = yield from self._probe_effects(candidate, context, probes, first, candidate_id)
        if isinstance(outcome, tuple):
            evaluations.extend(outcome[1])
            return finish(decision=None, error=outcome[0])
        evaluated = outcome
        rest = [r for r in PROBE_ROLES if r not in first]
        if rest and not self._decided(evaluated, rest):
            more = yield from self._probe_effects(
                candidate, context, probes, tuple(rest), candidate_id
            )
            if isinstance(more, tuple):
                evaluations.extend(evaluated + more[1])
                return finish(decision=None, error=more[0])
            evaluated = evaluated + more
        elif rest:
            evaluated = evaluated + [ProbeEvaluation(role=r, query=probes[r]) for r in rest]
        order = {r: i for i, r in enumerate(PROBE_ROLES)}
        evaluations.extend(sorted(evaluated, key=lambda e: order[e.role]))

        # Stage 4 (Sec. 4.5, App. B.6): CMTE, score-first admission, tie-break near zero.
        admitted = yield from self._stage(
            "admission", candidate_id, self._admission_stage(candidate, context, evaluations)
        )
        if isinstance(admitted, StageError):
            value = cmte([e.contribution or 0.0 for e in evaluations])
            return finish(decision=None, cmte=value, error=admitted)
        decision, value, tie, explanation = admitted

        # Stage 5 (App. B.7): post-hoc reason; it only sees the finalised prediction.
        reason = yield from self._stage(
            "reason", candidate_id, self._reason_stage(candidate, context, decision, explanation)
        )
        return finish(
            decision=decision,
            cmte=value,
            score=unit_score(value, cfg.weights),
            tie_break=tie,
            explanation=explanation,
            reason=reason,
        )

    def _stage(self, stage: AdmissionStage, candidate_id: str | None, body: _Gen) -> _Gen:
        """Run ``body`` between a start and an end/error event; return its result."""
        yield _Emit(AdmissionEvent(stage=stage, phase="start", candidate_id=candidate_id))
        try:
            result = yield from body
        except GeneratorExit:
            raise
        except BaseException as exc:
            payload = {"error_type": type(exc).__name__, "error": redact(str(exc))[:500]}
            yield _Emit(
                AdmissionEvent(
                    stage=stage, phase="error", candidate_id=candidate_id, payload=payload
                )
            )
            raise
        error = result.error if isinstance(result, ReasonClassification) else result
        if isinstance(error, StageError):
            payload = {"failed_stage": error.stage, "error": redact(error.message)}
            phase: Literal["end", "error"] = "error"
        else:
            payload, phase = _stage_payload(stage, result), "end"
        yield _Emit(
            AdmissionEvent(stage=stage, phase=phase, candidate_id=candidate_id, payload=payload)
        )
        return result

    def _probe_effects(
        self,
        candidate: str,
        context: str,
        probes: Probes,
        roles: tuple[ProbeRole, ...],
        candidate_id: str | None,
    ) -> _Gen:
        """Responses, then judge and auditor, for ``roles``; (error, partial) on failure."""
        responses = yield from self._stage(
            "responses", candidate_id, self._response_stage(candidate, probes, roles)
        )
        if isinstance(responses, StageError):
            return responses, [ProbeEvaluation(role=r, query=probes[r]) for r in roles]
        evaluated = yield from self._stage(
            "evaluation",
            candidate_id,
            self._evaluation_stage(candidate, context, probes, responses, roles),
        )
        if isinstance(evaluated, StageError):
            partial = [
                ProbeEvaluation(
                    role=r,
                    query=probes[r],
                    control_response=responses[r][0],
                    treatment_response=responses[r][1],
                )
                for r in roles
            ]
            return evaluated, partial
        return evaluated

    def _decided(self, evaluated: list[ProbeEvaluation], rest: list[ProbeRole]) -> bool:
        """Whether the roles in ``rest`` need not run.

        ``if_open``: they cannot change the sign of CMTE, whatever they give. ``if_uncertain``
        also skips them after a helpful relevant probe and a harmless risk probe, but only
        when the partial CMTE is already positive: a skip then always ends in ``store``, so
        this preset never rejects a candidate that the full triplet would store (its other
        decisions are made on the same evidence as the default's).
        """
        weights, eps = self.config.weights, self.config.epsilon * len(PROBE_ROLES)
        partial = sum(e.contribution or 0.0 for e in evaluated)
        if self.config.irrelevant_probe == "if_uncertain" and partial > eps:
            by_role = {e.role: e for e in evaluated}
            relevant, risk = by_role.get("relevant"), by_role.get("risk")
            if relevant and risk and relevant.effect == "helpful" and (risk.contribution or 0) >= 0:
                return True
        low = partial + sum(weights.role_range(r)[0] for r in rest)
        high = partial + sum(weights.role_range(r)[1] for r in rest)
        return low > eps or high < -eps


def _ignored(awaitable: object) -> None:
    """A listener's awaitable on the sync path: a coroutine is closed, with a warning."""
    if inspect.iscoroutine(awaitable):
        awaitable.close()
        logger.warning("async admission listener ignored on the sync path")


def _flagged(decision: AdmissionDecision, harm: KnownHarm | None) -> AdmissionDecision:
    """``decision`` carrying a flagged known harm (and its line in the explanation)."""
    if harm is None:
        return decision
    explanation = f"{decision.explanation}\n{harm.reason()}".strip()
    return decision.model_copy(update={"known_harm": harm, "explanation": explanation})
