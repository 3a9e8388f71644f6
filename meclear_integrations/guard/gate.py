"""What runs around one clearance in production: trigger, ledger shortcut, budget, record.

:class:`ClearanceGate` is framework-free; an integration calls it around its engine run::

    plan = gate.plan(query, memories, config)         # trigger decision, prior candidate
    if not plan.run:
        report = gate.skipped(plan)                   # no model call, context unchanged
    else:
        report = engine.clear(memories, evaluate, prior_harmful=plan.prior)  # plan.config
    outcome = gate.finish(plan, report, success_signal=...)  # budget fit, ledger record

- The trigger (``meclear_integrations.triggers``) decides before any model call; a policy
  that raises (e.g. its database is down) lets the query through to clearance and says so
  in ``notes``, since clearing is what the integration does without a trigger.
- With a ledger, the memories it verified harmful before (and not restored since) are the
  engine's prior candidate: a repeat clearance costs the baseline's trials and one
  candidate's verification (4 evaluator calls at the defaults) instead of a cold
  run, plus one put-back test for each member whose own harm was never proven (once per
  memory; see ``core.prior`` and ``ledger.proof``). The engine verifies it; the ledger's
  belief is never applied unverified.
- A decision carrying a token budget is enforced after clearance (``fit_to_budget``).
- Every decision, skips included, is appended to the ledger. A ledger that fails at run
  time (connection lost) never fails the query: the run goes on without the shortcut or
  without the record, a warning is logged and ``notes`` says so. A ledger that cannot be
  opened at all fails when it is constructed, before any query.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from ..core.concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..core.config import ClearanceConfig
from ..core.memory import Memory
from ..core.prior import PriorCandidate
from ..core.redaction import redact
from ..core.report import ClearanceReport
from ..runtime.hashing import query_hash
from ..triggers.base import Trigger, TriggerContext, TriggerDecision
from ..triggers.policies import Always
from ..triggers.skip import skipped_report
from ..triggers.token_budget import BudgetFit, fit_to_budget

__all__ = ["ClearanceGate", "GateOutcome", "GatePlan", "LedgerLike"]

logger = logging.getLogger(__name__)


class LedgerLike(Protocol):
    """What the gate needs from a ledger (``meclear_integrations.ledger.HarmLedger``)."""

    def query_id(self, query: str) -> str:
        """The stable id of ``query`` (the ledger's when there is one).

        Args:
            query: The query text.

        Returns:
            The query id.
        """
        ...

    def prior_harmful(self, context: Sequence[Memory]) -> list[str]:
        """The ids of ``context`` that the ledger verified harmful before.

        Args:
            context: The retrieved memories.

        Returns:
            The ids, most harmful first.
        """
        ...

    # A ledger may also offer ``prior_candidate(context, query=...) -> PriorCandidate``
    # (ids and the members to put back, scoped to the question when it also offers
    # ``scoped_harm``); the gate uses it when present, else ``prior_harmful``.

    @property
    def record(self) -> Callable[..., Any]:
        """The ledger's ``record`` callable, which appends one decision.

        Its signature is ``record(report, *, query, context, origin, trigger,
        trigger_reason, extra, ...)``.
        """


@dataclass(frozen=True, slots=True)
class GatePlan:
    """The gate's decision for one query, before any model call."""

    query: str
    query_id: str
    memories: tuple[Memory, ...]
    decision: TriggerDecision
    config: ClearanceConfig
    """The engine configuration to run with (the decision's early-exit wish applied)."""
    prior_ids: tuple[str, ...] = ()
    """The ledger's prior candidate (memories of this context verified harmful before)."""
    prior_unproven: tuple[str, ...] = ()
    """Members of ``prior_ids`` whose own harm was never proven (the engine puts them back
    one at a time; ``core.prior``)."""
    prior_settled: tuple[str, ...] = ()
    """Members of ``prior_ids`` whose harm for this question a reference or a person's
    correction verified (``core.prior``)."""
    prior_carriers: tuple[str, ...] = ()
    """Members of ``prior_ids`` named carriers of the harm (``core.prior``)."""
    prior_scoped: bool = False
    """The prior candidate is the ledger's harm for this question or one like it (tried
    before the engine's early exit; ``core.prior``)."""
    notes: dict[str, str] = field(default_factory=dict)
    """What went wrong on the side (a trigger or ledger failure), redacted."""

    @property
    def run(self) -> bool:
        """Whether the trigger decided to clear this query."""
        return self.decision.run

    @property
    def prior(self) -> PriorCandidate:
        """What to pass to the engine as ``prior_harmful``."""
        return PriorCandidate(
            ids=self.prior_ids,
            unproven=self.prior_unproven,
            settled=self.prior_settled,
            carriers=self.prior_carriers,
            scoped=self.prior_scoped,
        )


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """The decision after clearance: report, budget fit and ledger record."""

    report: ClearanceReport
    budget: BudgetFit | None = None
    ledger_run_id: str | None = None
    notes: dict[str, str] = field(default_factory=dict)
    decision: TriggerDecision | None = None

    @property
    def returned_ids(self) -> list[str]:
        """Ids to return: the report's kept memories minus budget drops, retrieval order."""
        dropped = set(self.budget.dropped_ids) if self.budget else set()
        return [i for i in self.report.kept_ids if i not in dropped]

    def metadata(self) -> dict[str, Any]:
        """Run-level fields for every returned item's metadata (trigger, ledger, budget).

        Returns:
            The fields, to merge into each item's per-memory metadata.
        """
        meta: dict[str, Any] = {}
        if self.decision is not None:
            meta["trigger"] = {
                "policy": self.decision.policy,
                "reason": self.decision.reason,
                "run": self.decision.run,
            }
        if self.report.status == "skipped":
            meta["status"] = "skipped"
            meta["status_reason"] = self.report.status_reason
        if self.ledger_run_id is not None:
            meta["ledger_run_id"] = self.ledger_run_id
        if self.report.clearance_search == "prior":
            meta["ledger_guided"] = True
        if self.budget is not None and self.budget.dropped_ids:
            meta["token_budget"] = {
                "reason": self.budget.reason,
                "max_tokens": self.budget.max_tokens,
                "tokens_before": self.budget.tokens_before,
                "tokens_after": self.budget.tokens_after,
                "dropped_ids": list(self.budget.dropped_ids),
                "order": self.budget.order,
            }
        if self.notes:
            meta["notes"] = dict(self.notes)
        return meta


def _failure(exc: BaseException) -> str:
    return redact(f"{type(exc).__name__}: {exc}")[:300]


class ClearanceGate:
    """Trigger, ledger shortcut, token budget and ledger record around clearance.

    See the module docstring for the order of the decisions.

    Args:
        trigger: When to clear; defaults to
            :class:`~meclear_integrations.triggers.Always`.
        ledger: A ``HarmLedger`` (or any :class:`LedgerLike`) that records every decision
            and offers the memories it verified harmful before; None records nothing.
        token_counter: Counts tokens for the budget fit when the deciding policy has no
            counter of its own (default: about 4 characters per token).
        record_skipped: Also record declined queries (what feedback can refer to).
        shortcut: False records to the ledger without offering its verified harm to the
            engine (every clearance cold).
        origin: The origin label written with each ledger record.
        record_failed: Also record runs that failed open (False for background audits,
            which retry instead and record only their final result).

    Example:
        >>> from meclear_integrations.guard.gate import ClearanceGate
        >>> ClearanceGate()
        ClearanceGate(trigger=Always(), ledger=None)
    """

    def __init__(
        self,
        *,
        trigger: Trigger | None = None,
        ledger: LedgerLike | None = None,
        token_counter: Callable[[str], int] | None = None,
        record_skipped: bool = True,
        shortcut: bool = True,
        origin: str = "live",
        record_failed: bool = True,
    ) -> None:
        self.trigger = trigger if trigger is not None else Always()
        self.record_failed = record_failed
        self.ledger = ledger
        self.shortcut = shortcut
        self.token_counter = token_counter
        self.record_skipped = record_skipped
        self.origin = origin

    def __repr__(self) -> str:
        return f"ClearanceGate(trigger={self.trigger!r}, ledger={self.ledger!r})"

    # ------------------------------------------------------------------ plan
    def query_id(self, query: str) -> str:
        """The stable id of ``query`` (the ledger's when there is one).

        Args:
            query: The query text.

        Returns:
            The query id.
        """
        return self.ledger.query_id(query) if self.ledger is not None else query_hash(query)

    def plan(self, query: str, memories: Sequence[Memory], config: ClearanceConfig) -> GatePlan:
        """Decide before any model call (sync: a ledger-backed trigger blocks briefly).

        Args:
            query: The query text.
            memories: The retrieved memories.
            config: The component's engine configuration.

        Returns:
            Whether to run, the configuration to run with and the ledger's prior candidate.
        """
        return run_steps(self._planning(query, memories, config))

    async def aplan(
        self, query: str, memories: Sequence[Memory], config: ClearanceConfig
    ) -> GatePlan:
        """:meth:`plan` for asyncio callers (database reads off the event loop)."""
        return await arun_steps(self._planning(query, memories, config))

    def _planning(
        self, query: str, memories: Sequence[Memory], config: ClearanceConfig
    ) -> Steps[GatePlan]:
        """:meth:`plan`'s steps: the trigger's decision, the ledger's prior candidate."""
        context = self._context(query, memories)
        notes: dict[str, str] = {}
        try:
            decision = yield Call(
                partial(self.trigger.decide, context), partial(self.trigger.adecide, context)
            )
        except Exception as exc:
            decision = self._trigger_failed(exc, notes)
        prior = PriorCandidate()
        if decision.run and context.memories and self.ledger is not None and self.shortcut:
            prior = yield Call(partial(self._prior, context.memories, notes, context.query))
        return self._plan(context, decision, config, prior, notes)

    def _context(self, query: str, memories: Sequence[Memory]) -> TriggerContext:
        return TriggerContext(query=query, query_id=self.query_id(query), memories=tuple(memories))

    def _trigger_failed(self, exc: Exception, notes: dict[str, str]) -> TriggerDecision:
        notes["trigger"] = f"failed, clearing anyway: {_failure(exc)}"
        logger.warning(
            "MeClear trigger %s failed; clearing anyway: %s", self.trigger.name, _failure(exc)
        )
        return TriggerDecision(run=True, policy=self.trigger.name, reason="trigger_error")

    def _prior(
        self, memories: Sequence[Memory], notes: dict[str, str], query: str | None = None
    ) -> PriorCandidate:
        if self.ledger is None or not self.shortcut:
            return PriorCandidate()
        try:
            candidate = getattr(self.ledger, "prior_candidate", None)
            if candidate is not None and query is not None and hasattr(self.ledger, "scoped_harm"):
                return PriorCandidate.of(candidate(memories, query=query))  # scoped (ledger)
            if candidate is not None:
                return PriorCandidate.of(candidate(memories))
            return PriorCandidate.of(self.ledger.prior_harmful(memories))
        except Exception as exc:
            notes["ledger"] = f"prior lookup failed, cold clearance: {_failure(exc)}"
            logger.warning("MeClear ledger lookup failed; clearing cold: %s", _failure(exc))
            return PriorCandidate()

    @staticmethod
    def _plan(
        context: TriggerContext,
        decision: TriggerDecision,
        config: ClearanceConfig,
        prior: PriorCandidate,
        notes: dict[str, str],
    ) -> GatePlan:
        wish = decision.early_exit
        if decision.run and wish is not None and config.early_exit != wish:
            config = config.model_copy(update={"early_exit": wish})
        return GatePlan(
            query=context.query,
            query_id=context.query_id,
            memories=context.memories,
            decision=decision,
            config=config,
            prior_ids=prior.ids,
            prior_unproven=prior.unproven,
            prior_settled=prior.settled,
            prior_carriers=prior.carriers,
            prior_scoped=prior.scoped,
            notes=notes,
        )

    def skipped(self, plan: GatePlan) -> ClearanceReport:
        """The report of a declined query: every memory kept, no model call.

        Args:
            plan: The plan that declined the query.

        Returns:
            A ``status="skipped"`` report.
        """
        return skipped_report(plan.memories, plan.config, plan.decision)

    # ------------------------------------------------------------------ finish
    def finish(self, plan: GatePlan, report: ClearanceReport, **record: Any) -> GateOutcome:
        """Fit the token budget and append the decision to the ledger.

        ``record``: the ledger fields the integration knows (``success_signal``,
        ``agent_model``, ``judge_model``, ``model_calls``, ``trace_run_id``,
        ``trace_system``).

        Args:
            plan: The query's plan.
            report: The engine's report (or :meth:`skipped`'s).
            **record: The ledger fields the integration knows.

        Returns:
            The report after the budget fit and the ledger outcome.
        """
        return run_steps(self._finishing(plan, report, record))

    async def afinish(self, plan: GatePlan, report: ClearanceReport, **record: Any) -> GateOutcome:
        """:meth:`finish` with the ledger write off the event loop.

        A query whose caller has cancelled it is not recorded as a run: the write is skipped
        when the task is already being cancelled, or when the cancellation arrives before
        the write has started (:func:`caller_cancelled`).
        """
        return await arun_steps(self._finishing(plan, report, record))

    def _finishing(
        self, plan: GatePlan, report: ClearanceReport, record: dict[str, Any]
    ) -> Steps[GateOutcome]:
        """:meth:`finish`'s steps: the budget fit, the ledger write."""
        budget = self._fit(plan, report)
        notes = dict(plan.notes)
        args = (plan, report, budget, notes, record)
        run_id = yield Call(
            partial(self._record, *args), partial(self._record_unless_cancelled, *args)
        )
        return GateOutcome(report, budget, run_id, notes, plan.decision)

    async def _record_unless_cancelled(
        self,
        plan: GatePlan,
        report: ClearanceReport,
        budget: BudgetFit | None,
        notes: dict[str, str],
        record: dict[str, Any],
    ) -> str | None:
        """:meth:`_record` in a thread, skipped if the caller cancels before it starts."""
        if not self._records(report) or caller_cancelled():
            return None
        cancelled = threading.Event()

        def write() -> str | None:
            return None if cancelled.is_set() else self._record(plan, report, budget, notes, record)

        try:
            return await asyncio.to_thread(write)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def _fit(self, plan: GatePlan, report: ClearanceReport) -> BudgetFit | None:
        limit = plan.decision.max_tokens
        if limit is None or not plan.run:
            return None
        counter = plan.decision.counter or self.token_counter
        return fit_to_budget(report, limit, counter=counter)

    def _records(self, report: ClearanceReport) -> bool:
        if self.ledger is None or (report.status == "failed" and not self.record_failed):
            return False
        return self.record_skipped or report.status != "skipped"

    def _record(
        self,
        plan: GatePlan,
        report: ClearanceReport,
        budget: BudgetFit | None,
        notes: dict[str, str],
        record: dict[str, Any],
    ) -> str | None:
        if not self._records(report):
            return None
        extra = dict(record.pop("extra", None) or {})
        if budget is not None and budget.dropped_ids:
            extra["token_budget"] = budget.model_dump()
        if plan.notes:
            extra["notes"] = dict(plan.notes)
        try:
            stored = self.ledger.record(  # type: ignore[union-attr]
                report,
                query=plan.query,
                context=list(plan.memories),
                origin=self.origin,
                trigger=plan.decision.policy,
                trigger_reason=plan.decision.reason,
                extra=extra,
                **record,
            )
        except Exception as exc:
            notes["ledger"] = f"record failed, decision not recorded: {_failure(exc)}"
            logger.warning("MeClear ledger record failed: %s", _failure(exc))
            return None
        return getattr(stored, "run_id", None)


def caller_cancelled() -> bool:
    """Whether the running asyncio task has a cancellation pending (its caller gave up).

    Returns:
        True inside a task being cancelled; False outside a task.
    """
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop
        return False
    return task is not None and task.cancelling() > 0
