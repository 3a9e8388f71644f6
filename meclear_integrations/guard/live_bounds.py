"""Bounds of live use around one clearance: a wall bound, the circuit breaker, the budget.

The LangChain and LlamaIndex components run every query through a :class:`LiveGuard`:

- **Wall bound** (:func:`live_config`): in live use a query's clearance is bounded by
  :data:`LIVE_MAX_WALL_SECONDS` unless ``clearance.max_wall_seconds`` is set explicitly
  (``ClearanceConfig(max_wall_seconds=None)`` removes the bound; the bare engine keeps
  None as its default). When it runs out the query fails open (``status="failed"``,
  reason ``time_budget``) with a ``FailOpenWarning``.
- **Circuit breaker** (:mod:`~meclear_integrations.runtime.breaker`): a query the open breaker
  declines skips clearance at once: every item unchanged, ``status="skipped"``,
  ``status_reason="circuit_open"``, a ``FailOpenWarning`` (reason ``circuit_open``, once
  per component instance, logged every time) and a clearance event with
  ``skipped: "circuit_open"``. :func:`provider_outcome` says what a finished clearance
  tells the breaker.
- **Budget up front** (:func:`budget_shortfall`, below): when
  ``clearance.max_evaluator_calls`` is below the least any clearing run of this context
  needs, the query is declined before any model call: ``status="skipped"``,
  ``status_reason="budget"``, a ``FailOpenWarning`` (reason ``budget``) and a clearance
  event with ``skipped: "budget"`` and the figures. Not with a ledger (its verified harm
  can make a repeat clearance cheaper than a cold one).

Under ``on_failure="closed"`` a declined query raises instead (:meth:`GuardTicket.error`:
``CircuitOpenError`` or ``BudgetExceededError``).

The least a clearance costs is known before any model call. A query whose
``max_evaluator_calls`` cannot pay for a clearance that clears anything is declined up
front, instead of spending part of the budget and failing open on exactly the queries that
need it. :func:`minimum_evaluator_calls` counts, for a context of K memories and the run's
settings, the evaluator calls every clearing run makes: the baseline's T trials, one call
(T without ``adaptive_trials``) for each distinct coalition of the screening batch (the
leave-one-outs of Eq. 7 when the estimator uses them, and the estimator's first plan:
every coalition for exact enumeration, the KernelSHAP budget, the permutations' prefixes,
the hierarchical estimator's block unions), and the remaining trials of one verified
candidate (Eq. 18-19). Later stages (hierarchical screening, extra trials of the
sequential rule, more candidates, escalation) only add to it, so a cap below it can never
see a clearance finish; a run that exits early on a clean context costs less, but clears
nothing either.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..core.config import ClearanceConfig
from ..core.errors import BudgetExceededError
from ..core.estimators import make_estimator
from ..core.failures.faults import exception_chain
from ..core.failures.kind import CircuitOpenError, failure_kind
from ..core.memory import Memory
from ..core.report import ClearanceReport
from ..core.screening import loo_coalitions
from ..runtime.breaker import Admission, CircuitBreaker, Outcome
from ..triggers.base import TriggerDecision
from ..triggers.skip import skipped_report

if TYPE_CHECKING:
    import numpy as np
else:
    from ..core.lazy import np

__all__ = [
    "LIVE_MAX_WALL_SECONDS",
    "GuardTicket",
    "LiveGuard",
    "budget_shortfall",
    "live_config",
    "minimum_evaluator_calls",
    "provider_outcome",
]


def minimum_evaluator_calls(config: ClearanceConfig, k: int) -> int:
    """The evaluator calls every run that can clear something makes (module docstring).

    Args:
        config: The engine settings of the run.
        k: The number of memories in the context.

    Returns:
        The lower bound (0 for an empty context).
    """
    if k <= 0:
        return 0
    single = 1 if config.adaptive_trials else config.trials
    estimator = make_estimator(config, np.random.default_rng(config.seed), k)
    full, *leave_one_out = loo_coalitions(k)
    batch = set(estimator.plan(k))
    if estimator.memory_loo:
        batch.update(leave_one_out)
    batch.discard(full)
    candidate = config.trials - single  # a candidate's trials beyond its first
    return config.trials + single * len(batch) + candidate


def budget_shortfall(config: ClearanceConfig, k: int) -> int | None:
    """The least a clearance needs when ``max_evaluator_calls`` cannot pay it, else None.

    Args:
        config: The engine settings of the run.
        k: The number of memories in the context.

    Returns:
        :func:`minimum_evaluator_calls` when it exceeds the cap, else None (no cap, or
        it fits).
    """
    cap = config.budget.max_evaluator_calls
    if cap is None or k > config.budget.max_memories:
        return None
    try:
        needed = minimum_evaluator_calls(config, k)
    except Exception:  # settings the engine itself rejects: let the run report them
        return None
    return needed if needed > cap else None


LIVE_MAX_WALL_SECONDS = 60.0
"""Default per-query wall bound of the integrations, in seconds."""


def live_config(config: ClearanceConfig) -> ClearanceConfig:
    """``config`` with the live wall bound applied, unless ``max_wall_seconds`` was set.

    Args:
        config: The component's engine configuration.

    Returns:
        ``config`` itself, or a copy with ``max_wall_seconds=LIVE_MAX_WALL_SECONDS``.
    """
    budget = config.budget
    if "max_wall_seconds" in budget.model_fields_set or budget.max_wall_seconds is not None:
        return config
    timed = budget.model_copy(update={"max_wall_seconds": LIVE_MAX_WALL_SECONDS})
    return config.model_copy(update={"budget": timed})


def _timed_out(exc: BaseException) -> bool:
    return any(
        isinstance(link, BudgetExceededError) and link.reason == "time_budget"
        for link in exception_chain(exc)
    )


def provider_outcome(
    report: ClearanceReport | None = None, exc: BaseException | None = None
) -> Outcome:
    """What a clearance tells the circuit breaker about the provider.

    ``failure``: no call of the query was answered and a transient provider error outlived
    the engine's retries, the wall bound ran out (calls hung), or the judge never gave a
    readable verdict. ``success``: the run finished (complete or unverified), so the
    provider answered. ``neutral``: anything else (skipped, a call budget, a content
    rejection, a permanent failure, cancellation, and a failed run some of whose calls were
    answered: the provider works, the failing calls followed the query's content).

    Args:
        report: The engine's report, when the run returned one.
        exc: The exception the run raised, if any.

    Returns:
        ``"success"``, ``"failure"`` or ``"neutral"``.
    """
    if exc is not None:
        if not isinstance(exc, Exception):
            return "neutral"
        if _timed_out(exc) or failure_kind(exc) in ("transient", "unreadable"):
            return "failure"
        return "neutral"
    if report is None or report.status == "skipped":
        return "neutral"
    if report.status in ("complete", "unverified"):
        return "success"
    failure = report.failure
    if failure is None or failure.coalitions_evaluated > 0:
        return "neutral"  # some calls were answered: the failing ones followed the content
    if failure.reason == "time_budget":
        return "failure"
    if failure.reason == "evaluator_error" and failure.kind in ("transient", "unreadable"):
        return "failure"
    return "neutral"


class GuardTicket:
    """One query's admission.

    As a context manager around the clearance it reports the outcome to the breaker
    (:meth:`observe` the report first).

    Args:
        breaker: The breaker that admitted (or declined) the query, if any.
        admission: Its answer.
        report: The skipped report of a declined query.
        reason: Why it was declined.
    """

    def __init__(
        self,
        breaker: CircuitBreaker | None,
        admission: Admission | None,
        report: ClearanceReport | None = None,
        reason: str | None = None,
        needed: int | None = None,
        memory_ids: Sequence[str] | None = None,
    ) -> None:
        self.breaker = breaker
        self.memory_ids = memory_ids
        """The query's memories, reported to the breaker with the outcome."""
        self.needed = needed
        """The least a clearance needs (a ``budget`` decline)."""
        self.admission = admission
        self.report = report
        """The skipped report when the query is declined, else None."""
        self.reason = reason
        """Why it was declined (``circuit_open``), else None."""
        self._seen: ClearanceReport | None = None

    @property
    def declined(self) -> bool:
        """Clearance is skipped for this query."""
        return self.report is not None

    def event_payload(self) -> dict[str, Any]:
        """The clearance-end payload of a declined query."""
        payload: dict[str, Any] = {
            "stage": "clearance",
            "phase": "end",
            "skipped": self.reason,
            "status_reason": self.reason,
            "cleared_ids": [],
        }
        if self.reason == "circuit_open" and self.admission is not None:
            payload["circuit"] = self.admission.payload()
        if self.reason == "budget" and self.report is not None:
            payload["budget"] = self._budget()
        return payload

    def _budget(self) -> dict[str, Any]:
        assert self.report is not None
        return {
            "max_evaluator_calls": self.report.config.budget.max_evaluator_calls,
            "min_evaluator_calls": self.needed,
            "k": len(self.report.kept),
        }

    def detail(self) -> str:
        """A one-line explanation for the warning of a declined query."""
        admission = self.admission
        if self.reason == "circuit_open" and admission is not None:
            return (
                f"the circuit breaker is {admission.state} after {admission.failures} "
                f"consecutive provider failures; clearance resumes with a probe in "
                f"{admission.retry_in:.1f}s"
            )
        if self.reason == "budget":
            budget = self._budget()
            return (
                f"max_evaluator_calls={budget['max_evaluator_calls']} cannot pay for a "
                f"clearance of K={budget['k']} memories, which needs at least "
                f"{budget['min_evaluator_calls']} evaluator calls with these settings; "
                f"raise the cap or retrieve fewer"
            )
        return str(self.reason)

    def error(self) -> Exception:
        """What a declined query raises when failing closed."""
        if self.reason == "budget":
            return BudgetExceededError(f"MeClear: {self.detail()}", reason="call_budget")
        return CircuitOpenError(f"MeClear: clearance skipped: {self.detail()}")

    def observe(self, report: ClearanceReport) -> ClearanceReport:
        """Note the run's report (for the outcome) and return it."""
        self._seen = report
        return report

    def __enter__(self) -> GuardTicket:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.breaker is None or self.admission is None or not self.admission.admitted:
            return
        outcome = provider_outcome(self._seen, exc)
        self.breaker.record(outcome, probe=self.admission.probe, memory_ids=self.memory_ids)


class LiveGuard:
    """A component's guard: admits each query through its breaker.

    Args:
        breaker: The component's circuit breaker (None: no breaker).
        budget_check: Decline up front a query whose call cap cannot pay for clearance.
    """

    def __init__(self, breaker: CircuitBreaker | None, *, budget_check: bool = True) -> None:
        self.breaker = breaker
        self.budget_check = budget_check

    def admit(self, memories: Sequence[Memory], config: ClearanceConfig) -> GuardTicket:
        """The ticket of one query.

        Declined, with its skipped report, when the breaker is open.

        Args:
            memories: The query's context.
            config: The engine configuration the query would run with.

        Returns:
            A :class:`GuardTicket`; use it as a context manager around the clearance.
        """
        needed = budget_shortfall(config, len(memories)) if self.budget_check else None
        if needed is not None:
            report = self._skipped(memories, config, "budget")
            return GuardTicket(None, None, report, "budget", needed)
        if self.breaker is None:
            return GuardTicket(None, None)
        admission = self.breaker.admit([m.id for m in memories])
        if admission.admitted:
            return GuardTicket(self.breaker, admission, memory_ids=[m.id for m in memories])
        report = self._skipped(memories, config, "circuit_open")
        return GuardTicket(self.breaker, admission, report, "circuit_open")

    @staticmethod
    def _skipped(
        memories: Sequence[Memory], config: ClearanceConfig, reason: str
    ) -> ClearanceReport:
        decision = TriggerDecision(run=False, policy="live_guard", reason=reason)
        report = skipped_report(memories, config, decision)
        return report.model_copy(update={"status_reason": reason})
