"""The settings and the runtime every clearing component shares, framework-free.

``ClearingRetriever`` / ``MeClearCompressor`` (LangChain) and ``MeClearPostprocessor``
(LlamaIndex) are :class:`ClearingComponent` subclasses: the engine settings, the
fail-open switch, the mode and the grouped settings (:mod:`.settings`) are declared here
once, and so is what runs around their queries: the strict keyword check with the hints
of moved settings, the per-instance failure policy, guard and call limiter, the
background mode's queue and audit workers (started with the component, stopped by
:meth:`ClearingComponent.close`, run on demand by :meth:`ClearingComponent.run_audits`),
the query's settings and flow, and the choice of the items to return. An integration adds
its model fields, turns its items into memories and reports events its framework's way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from ..core.config import ENGINE_SETTINGS, ClearanceConfig
from ..core.errors import ConfigurationError
from ..core.recency import RecencyPrior
from ..core.strict import RENAMED, accepted_names, reject_unknown
from ..guard.policy import FailureSwitch, LivePolicy, failure_mode, fold_clearance_scope
from ..runtime.limiter import CallLimiter, resolve_limiter
from ..telemetry import TraceSettings
from .field_docs import describe_fields
from .settings import MOVED, Documents, Limits, Loop

if TYPE_CHECKING:
    # What runs a query (the flow, the guard, the background audits, the result's
    # metadata) is imported by the methods that use it on first use: importing a
    # component loads its fields' types and no flow (tools/import_cost.py).
    from ..core.memory import Memory
    from ..guard.live_bounds import LiveGuard
    from ..jobs.protocol import AuditOutcome
    from ..jobs.snapshot import AuditSnapshot
    from ..runtime.loop_clients import PerLoopModels
    from .audit import Stoppable
    from .flow import QuerySettings
    from .steps import Flow, FlowResult

__all__ = ["ClearingComponent"]


def _fold_recency(data: Any) -> Any:
    """A component's ``recency=`` folded into its ``clearance`` configuration."""
    if not isinstance(data, Mapping) or data.get("recency") is None:
        return data
    out = dict(data)
    config = out.get("clearance")
    if isinstance(config, Mapping):
        out["clearance"] = {**config, "recency": out["recency"]}
    else:
        base = config if isinstance(config, ClearanceConfig) else ClearanceConfig()
        out["clearance"] = base.updated(recency=out["recency"])
    return out


Mode = Literal["clear", "shadow", "background"]


def _per_loop_models() -> PerLoopModels:
    """A component's per-event-loop model copies (``runtime.loop_clients``)."""
    from ..runtime.loop_clients import PerLoopModels

    return PerLoopModels()


class ClearingComponent(BaseModel):
    """Fields and runtime shared by the clearing components of both integrations.

    Not used directly: see ``ClearingRetriever``, ``MeClearCompressor`` and
    ``MeClearPostprocessor`` for the fields. A subclass sets :attr:`role_settings` and
    has ``llm`` and ``judge`` fields.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, defer_build=True)
    # The field docstrings are the descriptions, as with ``use_attribute_docstrings`` but
    # read from the parsed module (pipeline.field_docs: no frame walk on import); the
    # schema is built on first use, with them.

    role_settings: ClassVar[dict[str, str]] = {}
    """Which setting supplies each role (agent, judge, evaluator), for the messages of
    permanent failures."""
    also_accepted: ClassVar[tuple[str, ...]] = ()
    """Keyword arguments accepted besides the fields (a framework's own)."""

    clearance: ClearanceConfig = Field(default_factory=ClearanceConfig)
    """Engine configuration (``ClearanceConfig.paper()`` for the paper's settings). Unless
    ``max_wall_seconds`` is set explicitly, a query's clearance is bounded by
    ``guard.live_bounds.LIVE_MAX_WALL_SECONDS`` (60 s). The engine's ``retry`` is the only retry
    layer: ``llm`` and a model ``judge`` are called through a copy whose own retries are
    off (``runtime.loop_clients``)."""
    clearance_scope: Literal["minimal", "complete"] | None = None
    """Passthrough of ``ClearanceConfig.clearance_scope`` (None: as ``clearance`` says):
    ``"complete"`` also withholds the verified carriers of a harm (``core.stages.carriers``)."""
    recency: RecencyPrior | None = None
    """Passthrough of ``ClearanceConfig.recency`` (None: as ``clearance`` says, off by
    default): try the older of similar dated memories first as one verified candidate
    (``core.recency``; dates from the items' metadata, ``RecencyPrior.key``). Unusable
    dates (unreadable, out of range, in the future) are ignored with a counted warning."""
    on_failure: FailureSwitch | None = None
    """The fail-open/closed switch (same name as ``ClearanceConfig.failure.mode``, which it
    overrides when set; None follows ``clearance.on_failure``, ``"open"`` by default).
    ``"open"``: when clearance cannot finish for a transient reason (provider timeouts,
    429, 5xx, unreadable replies after retries, budgets) every item comes back unchanged
    with ``status``/``failure`` under the metadata key, and a ``FailOpenWarning`` is issued
    (once per reason per instance). ``"closed"``: those failures raise. Failures retrying
    cannot heal (credentials, unknown URL or model, invalid request, a bug in your agent or
    judge) and configuration errors always raise."""
    mode: Mode = "clear"
    """``"clear"``: clear on the request path. ``"shadow"``: run clearance, annotate metadata
    and emit events, but drop nothing (each item's ``cleared`` says whether clearance would
    have removed it). ``"background"`` (needs ``loop.ledger``): no model call on the request
    path; withhold the memories the ledger verified harmful for this question or ones like
    it, queue the audit of a triggered query and return at once
    (``meclear_integrations.pipeline.background``)."""
    deterministic_agent: bool | None = None
    """The agent gives the same answer to the same prompt, so it is asked once per coalition
    across trials. None: when the model declares temperature 0."""
    limits: Limits = Field(default_factory=Limits)
    """Circuit breaker, shared call limiter (``limiter`` or ``max_calls_in_flight``) and the
    size cap of event payloads (:class:`~meclear_integrations.pipeline.settings.Limits`)."""
    loop: Loop = Field(default_factory=Loop)
    """Trigger, harm ledger, background audit queue and workers
    (:class:`~meclear_integrations.pipeline.settings.Loop`)."""
    documents: Documents = Field(default_factory=Documents)
    """Results metadata key, rendered metadata, judge context, edge cases, reference key
    (:class:`~meclear_integrations.pipeline.settings.Documents`)."""
    tracing: TraceSettings = Field(default_factory=TraceSettings)
    """OpenTelemetry spans of each clearance (``meclear_integrations.telemetry``), emitted
    when the application has a recording tracer provider; ``detail`` sets how much."""

    _policy: LivePolicy = PrivateAttr()
    _guard: LiveGuard = PrivateAttr()
    _models: PerLoopModels = PrivateAttr(default_factory=_per_loop_models)
    _limiter: CallLimiter | None = PrivateAttr(default=None)
    _queue: Any = PrivateAttr(default=None)
    _audits: Any = PrivateAttr(default=None)
    _workers: Stoppable | None = PrivateAttr(default=None)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Each subclass's own field docstrings become descriptions (see ``model_config``)."""
        super().__pydantic_init_subclass__(**kwargs)
        describe_fields(cls)

    @model_validator(mode="before")
    @classmethod
    def _known_settings(cls, data: Any) -> Any:
        reject_unknown(
            cls.__name__,
            data,
            [*accepted_names(cls), *cls.also_accepted],
            engine=ENGINE_SETTINGS,
            renamed={**RENAMED, **MOVED},
        )
        return _fold_recency(fold_clearance_scope(data))

    @model_validator(mode="after")
    def _background_needs_a_ledger(self) -> ClearingComponent:
        if self.mode == "background" and self.loop.ledger is None:
            raise ConfigurationError(
                'mode="background" needs loop=Loop(ledger=HarmLedger(...)): the request path '
                "withholds the harm the ledger verified, and the audits record there"
            )
        return self

    def model_post_init(self, context: Any, /) -> None:
        """Create the per-instance failure policy, guard and limiter; start the audits."""
        from ..guard.live_bounds import LiveGuard

        super().model_post_init(context)
        self._policy = LivePolicy(
            type(self).__name__,
            self.role_settings,
            models=lambda: (getattr(self, "llm", None), getattr(self, "judge", None)),
        )
        self._guard = LiveGuard(self.limits.circuit_breaker, budget_check=self.loop.ledger is None)
        self._limiter = resolve_limiter(self.limits.limiter, self.limits.max_calls_in_flight)
        if self.mode == "background":
            from ..jobs.audit_gate import audit_gate  # SQLAlchemy: loaded in background mode only
            from .audit import open_queue, start_workers

            self._queue = open_queue(self.loop.ledger, self.loop.audit_queue)
            self._audits = audit_gate(self.loop, self._queue)
            self._workers = start_workers(self._queue, self, self.loop.audit_workers)

    def close(self) -> None:
        """Stop the background audit workers this component started (after their job)."""
        if self._workers is not None:
            self._workers.stop()
            self._workers = None

    def run_audits(self, *, limit: int | None = None) -> list[AuditOutcome]:
        """Run the due background audits now, on this thread (scripts, tests, cron jobs).

        Args:
            limit: The most audits to run.

        Returns:
            Their outcomes (``done``, ``retry``, ``dead``).

        Raises:
            ConfigurationError: The component is not in ``mode="background"``.
        """
        from .audit import run_pending

        if self._queue is None:
            raise ConfigurationError('run_audits() needs mode="background"')
        return run_pending(self._queue, self, limit=limit)

    def audit(self, snapshot: AuditSnapshot, *, run_id: str) -> AuditOutcome:
        """Run one background audit: the verified clearance of ``snapshot``, recorded.

        Called by the audit workers (``meclear_integrations.jobs``); the result is recorded
        in the ledger under ``run_id`` (the job id), so running a job twice records once.

        Args:
            snapshot: The job's frozen input.
            run_id: The job id.

        Returns:
            ``done``, ``retry`` or ``dead`` (``pipeline.audit.audit_outcome``).
        """
        raise NotImplementedError  # each integration rebuilds its items and drives the flow

    # ------------------------------------------------------------------ for the hosts
    def _engine_config(self) -> ClearanceConfig:
        """``clearance`` with ``on_failure`` set by the component's own switch, if any.

        With a ledger and ``loop.withhold_carriers``: ``clearance_scope="complete"``.
        """
        from .flow import component_config

        config = component_config(self.clearance, self.on_failure)
        loop = self.loop
        if (
            loop.ledger is not None
            and loop.withhold_carriers
            and config.clearance_scope != "complete"
        ):
            config = config.updated(clearance_scope="complete")
        return config

    def _absorb(self, exc: BaseException) -> None:
        """Return when ``exc`` fails open (warned); raise otherwise (``LivePolicy``)."""
        self._policy.absorb(exc, failure_mode(self.clearance, self.on_failure))

    def _query_settings(self, record: dict[str, Any]) -> QuerySettings:
        """What a query runs with: config, guard, gate and the ledger fields ``record``."""
        from .flow import QuerySettings, make_gate

        gate = make_gate(self.loop.trigger, self.loop.ledger)
        return QuerySettings(self._engine_config(), self._guard, gate, record)

    @staticmethod
    def _audit_settings(
        settings: QuerySettings, snapshot: AuditSnapshot, run_id: str
    ) -> QuerySettings:
        """A background audit's settings: replayed gate, the job's run id, failing open."""
        from .audit import audit_settings
        from .flow import QuerySettings

        settings = audit_settings(settings, snapshot, run_id)
        return QuerySettings(
            settings.config.updated(failure={"mode": "open"}),
            settings.guard,
            settings.gate,
            settings.record,
        )

    def _query_flow(
        self,
        query: str,
        count: int,
        load: Callable[[], list[Memory]],
        settings: QuerySettings,
        snapshot: dict[str, Any],
    ) -> Flow:
        """The query's flow: cleared now, or (background mode) queued for an audit.

        Args:
            query: The query.
            count: How many items were retrieved.
            load: Turns the items into memories (may raise: fails open or raises).
            settings: The query's settings.
            snapshot: What a background audit's snapshot keeps besides the memories.

        Returns:
            The flow to drive.
        """
        from .background import background_flow
        from .flow import clearance_flow

        if self.mode != "background":
            return clearance_flow(query, count, load, settings)
        return background_flow(
            query,
            count,
            load,
            settings,
            self._queue,
            policy=self.documents.edge_cases,
            snapshot=snapshot,
            audits=self._audits,
        )

    def _chosen(self, result: FlowResult, ids: Sequence[str]) -> list[tuple[int, dict[str, Any]]]:
        """The items to return for a result that is not a failure, with their metadata.

        Warns (once per reason) for a guarded query or a report worth a warning.
        """
        from .shaping import result_metadata

        if result.kind == "guarded":
            self._policy.fail_open_warning(str(result.reason), str(result.detail))
        elif result.kind == "cleared" and result.report is not None:
            self._policy.report_warning(result.report)
        return result_metadata(
            result, ids, policy=self.documents.edge_cases, shadow=self.mode == "shadow"
        )


describe_fields(ClearingComponent)
