"""MeClearPostprocessor: verified clearance of the retrieved nodes inside any query engine.

``index.as_query_engine(node_postprocessors=[MeClearPostprocessor(llm=llm)])`` (or a
``RetrieverQueryEngine``, or ``postprocess_nodes`` on its own) runs the MeClear engine on
the frozen retrieved context (Eq. 6): the task agent answers the query from coalitions of
the nodes, a judge scores each answer (the evaluator of Eq. 2), and the nodes whose
removal is verified to recover the answer are dropped (Eq. 18-20). Kept nodes come back
in their original order as new ``NodeWithScore`` objects with the per-memory results
under ``metadata["meclear"]`` (see ``nodes`` and ``meclear_integrations.payloads``).

Task agent: ``response_synthesizer`` (any LlamaIndex synthesizer, given the coalition's
original nodes) when set, else ``llm`` (default ``Settings.llm``) behind the package's
default answer prompt (``prompts.DEFAULT_ANSWER_PROMPT``; memories rendered by
``prompts.render_memories``). Judge: ``judge`` (a ``Judge``, an LLM or a function) or
``llm``; an LLM judges against the query's reference when there is one (``reference``
field or :func:`~meclear_integrations.llama_index.reference.query_reference`), and
reference-free otherwise.

Instrumentation: the clearance runs inside the postprocessor's span
(``_postprocess_nodes`` is wrapped by LlamaIndex; ``_apostprocess_nodes`` and
``clear_nodes`` / ``aclear_nodes`` are decorated here), so every agent and judge LLM call
is a child span; the sync path carries the span context into the engine's worker threads.
The stage events of :mod:`~meclear_integrations.llama_index.events` are emitted through
this module's dispatcher, every start closed by an end.

Edge cases (the policy of ``meclear_integrations.payloads``): no nodes -> ``[]``, no model
call, one clearance start/end pair with ``payload["skipped"] == "empty"``; every node
cleared -> ``[]`` (``edge_cases.all_cleared="keep_all"`` returns them all, marked);
identical texts -> separate memories with distinct ids.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 2, 6, 18-20.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from llama_index.core import Settings
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.dispatcher import active_instrument_tags
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.span import active_span_id
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.response_synthesizers import BaseSynthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from ..breaker import CircuitBreaker
from ..core.config import ClearanceConfig
from ..core.engine import MeClearEngine
from ..core.errors import ConfigurationError
from ..core.events import StageEvent
from ..core.memory import Memory
from ..core.redaction import redact
from ..core.report import ClearanceReport
from ..core.strict import accepted_names, reject_unknown
from ..cost import cost_source, with_event_cost, with_model_calls
from ..gate import GateOutcome
from ..judges.task import AsyncTaskEvaluator, TaskEvaluator, task_evaluator
from ..limiter import CallLimiter, resolve_limiter
from ..live_guard import LiveGuard, live_config
from ..live_policy import FailureSwitch, LivePolicy, failure_mode, is_deterministic
from ..loop_clients import PerLoopModels
from ..memory_metadata import present_keys
from ..payloads import DEFAULT_MAX_EVENT_BYTES, DEFAULT_METADATA_KEY, EdgeCasePolicy
from ..prompts import DEFAULT_ANSWER_PROMPT, format_answer_prompt, validate_metadata_keys
from ..telemetry import TraceSettings, clearance_scope
from ..telemetry.parents import llama_index_span
from ..triggers.base import Trigger
from ..usage import UsageMeter, metering
from .events import MeClearStageEvent, StageTracker, progress_event, stage_events
from .gating import GatedPostprocessing, prior_of
from .guarded import GuardedPostprocessing
from .judges import resolve_judge
from .model import as_text_model
from .nodes import annotate, error_nodes, node_ids, to_memories
from .reference import current_reference
from .usage import install_usage_handler

__all__ = ["MeClearPostprocessor", "NodeClearance", "dispatcher"]

dispatcher = get_dispatcher(__name__)
"""The dispatcher of the postprocessor's spans and stage events."""

_ROLE_SETTINGS = {
    "agent": "llm= or response_synthesizer=",
    "judge": "judge= (or llm=)",
    "evaluator": "response_synthesizer=",
}
"""Which setting supplies each role, for the messages of permanent failures."""


class NodeClearance(BaseModel):
    """The outcome of one clearance: the nodes to use and the engine's report.

    Returned by :meth:`MeClearPostprocessor.clear_nodes` (immutable).
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    nodes: list[NodeWithScore] = Field(
        description="Kept nodes (new objects, original order), or all nodes marked on fail-open.",
    )
    report: ClearanceReport | None = Field(
        description="The engine's report; None when nothing ran (no nodes) or the run failed open.",
    )
    error: str | None = Field(
        default=None,
        description=(
            'The transient failure that was absorbed (``on_failure="open"``): outside the '
            "engine (``report`` is None) or by the engine failing open (``report.status`` is "
            '``"failed"`` and every node is kept).'
        ),
    )


def _response_text(response: Any) -> str:
    if hasattr(response, "response_gen") and hasattr(response, "get_response"):
        response = response.get_response()
    text = getattr(response, "response", response)
    return "" if text is None else str(text)


async def _aresponse_text(response: Any) -> str:
    if hasattr(response, "async_response_gen") and hasattr(response, "get_response"):
        response = await response.get_response()
    return _response_text(response)


class MeClearPostprocessor(GatedPostprocessing, GuardedPostprocessing, BaseNodePostprocessor):
    """Drops the retrieved nodes that verifiably hurt the answer to this query.

    It runs the MeClear engine on the frozen retrieved nodes (Eq. 6): the task agent
    answers from coalitions of the nodes, a judge scores each answer (Eq. 2), and the nodes
    whose removal is verified to recover the answer are dropped (Eq. 18-20). Kept nodes come
    back in their original order as new ``NodeWithScore`` objects with the per-memory
    results under ``metadata["meclear"]``. Every field carries its description
    (``MeClearPostprocessor.model_fields``).

    Setup:
        Install the ``llama-index`` extra. No API key is needed for the simulated LLM used
        below; a real model needs its provider package and key (e.g.
        ``llama-index-llms-openai`` and ``OPENAI_API_KEY``).

        ```bash
        pip install -U "meclear-integrations[llama-index]"
        ```

    Args:
        llm: The task agent's model and, unless ``judge`` is set, the judge (default:
            ``Settings.llm``).
        response_synthesizer: Your own synthesizer as the task agent instead of ``llm``.
        judge: A ``meclear_integrations.judges`` judge, a LlamaIndex ``LLM`` or a function.
        reference: The reference answer of every query (``query_reference`` overrides it).
        clearance: The engine settings (``ClearanceConfig.paper()`` for the paper's);
            bounded at 60 s per query unless ``max_wall_seconds`` is set explicitly.
        circuit_breaker: Skips clearance for a cool-down after consecutive provider
            failures (default ``CircuitBreaker()``: 3 failures, 30 s; None: off).
        limiter: Bounds the model calls in flight across queries (a ``CallLimiter``;
            share one instance to bound several components; None: off).
        max_calls_in_flight: Shorthand for a limiter of this component's own.
        on_failure: ``"open"`` (documents unchanged and a ``FailOpenWarning`` on
            transient failures) or ``"closed"``; None follows ``clearance.on_failure``.
        trigger: When to clear (``meclear_integrations.triggers``); None clears every
            query.
        ledger: A ``HarmLedger`` recording every decision.
        answer_prompt: The default agent's prompt template.
        metadata_key: The metadata key of the per-memory results.
        judge_context: What the judge sees: every retrieved node (default) or only the
            coalition the agent saw.
        metadata_keys: Node metadata rendered with each memory for the default agent and
            the reference-free judge (None: common time and source keys).
        deterministic_agent: Ask the agent once per coalition across trials (None: when
            the LLM declares temperature 0).
        mode: ``"clear"``, or ``"shadow"`` (annotate and emit events, drop nothing).
        edge_cases: The policy when every node is cleared.
        max_event_bytes: The size cap of each event payload.
        tracing: The OpenTelemetry settings of each clearance.

    Example:
        ```python
        from llama_index.core.schema import NodeWithScore, TextNode

        from meclear_integrations.llama_index import MeClearPostprocessor, SimulatedLLM
        from meclear_integrations.simulation import redundant_harm_example

        case = redundant_harm_example()  # SIMULATED: two stale memories say January
        llm = SimulatedLLM.from_case(case)  # e.g. llama_index.llms.openai.OpenAI(...)
        nodes = [NodeWithScore(node=TextNode(id_=m.id, text=m.content)) for m in case.memories]
        postprocessor = MeClearPostprocessor(llm=llm, reference=case.reference)
        kept = postprocessor.postprocess_nodes(nodes, query_str=case.query)
        print([n.node.node_id for n in kept])  # ['g1', 'b1', 'b2', 'b3']
        ```

        Inside a query engine, with the reference given per query:

        ```python
        from llama_index.core import VectorStoreIndex

        from meclear_integrations.llama_index import HashEmbedding, query_reference

        index = VectorStoreIndex([n.node for n in nodes], embed_model=HashEmbedding())
        engine = index.as_query_engine(
            llm=llm, similarity_top_k=6, node_postprocessors=[MeClearPostprocessor(llm=llm)]
        )
        with query_reference(case.reference):
            print(engine.query(case.query))  # December 2023
        ```

        Async (``aquery`` / ``apostprocess_nodes`` await the agent and judge on the loop):

        ```python
        import asyncio

        kept = asyncio.run(postprocessor.apostprocess_nodes(nodes, query_str=case.query))
        print([n.node.node_id for n in kept])  # ['g1', 'b1', 'b2', 'b3']
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    llm: LLM | None = Field(
        default=None,
        exclude=True,
        description=(
            "Agent model behind the default answer prompt and, unless ``judge`` is set, the judge "
            "model; None uses ``Settings.llm`` (resolved at query time)."
        ),
    )
    response_synthesizer: BaseSynthesizer | None = Field(
        default=None,
        exclude=True,
        description=(
            "Your own ``BaseSynthesizer`` as the task agent (overrides ``llm`` as the agent): it "
            "receives the query and the coalition's original nodes."
        ),
    )
    judge: Any = Field(
        default=None,
        exclude=True,
        description=(
            "A ``Judge``, a LlamaIndex ``LLM``, a function (``CallableJudge``) or None (``llm``)."
        ),
    )
    reference: str | None = Field(
        default=None,
        description=(
            "Reference answer used for every query (``query_reference(...)`` overrides it)."
        ),
    )
    clearance: ClearanceConfig = Field(
        default_factory=ClearanceConfig,
        description=(
            "Engine configuration (``ClearanceConfig.paper()`` for the paper's settings). Unless "
            "``max_wall_seconds`` is set explicitly, a query's clearance is bounded by "
            "``live_guard.LIVE_MAX_WALL_SECONDS`` (60 s). The engine's ``retry`` is the only "
            "retry layer: ``llm`` and an LLM ``judge`` are called through a copy whose own "
            "retries are off (``provider_retries``)."
        ),
    )
    circuit_breaker: CircuitBreaker | None = Field(
        default_factory=CircuitBreaker,
        exclude=True,
        description=(
            'Skips clearance (``status="skipped"``, reason ``circuit_open``) for a cool-down '
            "after consecutive provider failures (``meclear_integrations.breaker``; default: 3 "
            "failures, 30 s). Pass one instance to several components to share it; None: off."
        ),
    )
    limiter: CallLimiter | None = Field(
        default=None,
        exclude=True,
        description=(
            "Bounds the model calls in flight (agent and judge, each call one slot) across every "
            "query of this component (``meclear_integrations.limiter``); pass one instance to "
            "several components to bound the process. None: no bound beyond each query's "
            "``clearance.max_concurrency``."
        ),
    )
    max_calls_in_flight: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Shorthand for a limiter of this component's own: ``CallLimiter(max_calls_in_flight)`` "
            "(not together with ``limiter``)."
        ),
    )
    answer_prompt: str = Field(
        default=DEFAULT_ANSWER_PROMPT,
        description=(
            "Default agent's prompt template (placeholders ``{memories}``, ``{question}``)."
        ),
    )
    metadata_key: str = Field(
        default=DEFAULT_METADATA_KEY,
        description="Metadata key of the per-memory results on returned nodes.",
    )
    judge_context: Literal["full", "coalition"] = Field(
        default="full",
        description=(
            "What the judge sees as context: every retrieved node (default; removing evidence "
            "then cannot make an answer look supported, and each distinct answer is judged once "
            "per query), or only the coalition the agent saw (opt-in; without a reference its "
            "verdicts reward deleting the evidence against an answer)."
        ),
    )
    metadata_keys: tuple[str, ...] | None = Field(
        default=None,
        description=(
            "Node metadata rendered, fenced as data, with each memory for the default agent and "
            "the reference-free judge; None: ``memory_metadata.DEFAULT_METADATA_KEYS`` (common "
            "time and source keys: ``date``, ``timestamp``, ``created_at``, ``creation_date``, "
            "``source``, ``file_name``...); ``()``: none."
        ),
    )
    deterministic_agent: bool | None = Field(
        default=None,
        description=(
            "The agent gives the same answer to the same prompt, so it is asked once per "
            "coalition across trials. None: when the LLM declares temperature 0."
        ),
    )
    mode: Literal["clear", "shadow"] = Field(
        default="clear",
        description=(
            '``"shadow"``: run clearance, annotate metadata and emit events, but drop nothing '
            "(each node's ``cleared`` says whether clearance would have removed it)."
        ),
    )
    edge_cases: EdgeCasePolicy = Field(
        default_factory=EdgeCasePolicy,
        description="Policy when every node is cleared (see ``meclear_integrations.payloads``).",
    )
    on_failure: FailureSwitch | None = Field(
        default=None,
        description=(
            "The fail-open/closed switch (same name and contract as "
            "``ClearanceConfig.on_failure`` and the LangChain ``ClearingRetriever``; None follows "
            '``clearance.on_failure``). ``"open"``: a transient failure returns every node '
            "unchanged with the failure under the metadata key and issues a ``FailOpenWarning`` "
            '(once per reason per instance); ``"closed"``: it raises. Failures retrying cannot '
            "heal (credentials, unknown URL or model, invalid request, a bug in your code) and "
            "configuration errors always raise."
        ),
    )
    max_event_bytes: int = Field(
        default=DEFAULT_MAX_EVENT_BYTES,
        ge=512,
        description="Size cap (JSON bytes) of each event payload.",
    )
    tracing: TraceSettings = Field(
        default_factory=TraceSettings,
        description=(
            "OpenTelemetry spans of each clearance (``meclear_integrations.telemetry``), emitted "
            "when the application has a recording tracer provider; ``detail`` sets how much."
        ),
    )
    trigger: Trigger | None = Field(
        default=None,
        exclude=True,
        description=(
            "When to clear (``meclear_integrations.triggers``); a declined query returns its "
            'nodes unchanged with ``status: "skipped"`` and no model call. None clears every '
            "query."
        ),
    )
    ledger: Any = Field(
        default=None,
        exclude=True,
        description=(
            "A ``HarmLedger``: every decision is recorded, and memories it verified harmful "
            "before are tried first (ledger-guided repeat clearances)."
        ),
    )

    _policy: LivePolicy = PrivateAttr()
    _guard: LiveGuard = PrivateAttr()
    _models: PerLoopModels = PrivateAttr(default_factory=PerLoopModels)
    _limiter: CallLimiter | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _known_settings(cls, data: Any) -> Any:
        valid = [*accepted_names(cls), "class_name"]
        reject_unknown(cls.__name__, data, valid, engine=ClearanceConfig.model_fields)
        return data

    def model_post_init(self, context: Any, /) -> None:
        """Create the per-instance failure policy (warn-once memory)."""
        super().model_post_init(context)
        self._policy = LivePolicy(type(self).__name__, _ROLE_SETTINGS)
        self._guard = LiveGuard(self.circuit_breaker, budget_check=self.ledger is None)
        self._limiter = resolve_limiter(self.limiter, self.max_calls_in_flight)

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearPostprocessor"

    @field_validator("metadata_keys", mode="before")
    @classmethod
    def _renderable_keys(cls, keys: Any) -> Any:
        return validate_metadata_keys(keys)

    @field_validator("answer_prompt")
    @classmethod
    def _has_placeholders(cls, template: str) -> str:
        missing = [p for p in ("{memories}", "{question}") if p not in template]
        if missing:
            raise ConfigurationError(f"answer_prompt lacks the placeholder(s) {', '.join(missing)}")
        return template

    # ------------------------------------------------------------------ LlamaIndex hooks
    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return self._clear(nodes, query_bundle).nodes

    @dispatcher.span
    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return (await self._aclear(nodes, query_bundle)).nodes

    # ------------------------------------------------------------------ public
    @dispatcher.span
    def clear_nodes(
        self, nodes: Sequence[NodeWithScore], query: str | QueryBundle
    ) -> NodeClearance:
        """Clear ``nodes`` for ``query`` and return the nodes with the engine's report.

        Args:
            nodes: The retrieved nodes.
            query: The query text or bundle.

        Returns:
            The kept nodes, the engine's report and any absorbed failure.

        Example:
            ```python
            from llama_index.core.schema import NodeWithScore, TextNode

            from meclear_integrations.llama_index import MeClearPostprocessor, SimulatedLLM
            from meclear_integrations.simulation import redundant_harm_example

            case = redundant_harm_example()  # SIMULATED
            nodes = [NodeWithScore(node=TextNode(id_=m.id, text=m.content)) for m in case.memories]
            postprocessor = MeClearPostprocessor(
                llm=SimulatedLLM.from_case(case), reference=case.reference
            )
            result = postprocessor.clear_nodes(nodes, case.query)
            print(result.report.status, result.report.cleared_ids)  # complete ['f1', 'f2']
            ```
        """
        return self._clear(list(nodes), _bundle(query))

    @dispatcher.span
    async def aclear_nodes(
        self, nodes: Sequence[NodeWithScore], query: str | QueryBundle
    ) -> NodeClearance:
        """Async :meth:`clear_nodes` (agent and judge awaited on the event loop).

        Args:
            nodes: The retrieved nodes.
            query: The query text or bundle.

        Returns:
            The kept nodes, the engine's report and any absorbed failure.
        """
        return await self._aclear(list(nodes), _bundle(query))

    # ------------------------------------------------------------------ pieces
    def _resolved_llm(self) -> LLM | None:
        """The agent / judge LLM, called through a copy without provider retries."""
        if self.llm is not None:
            return self._models(self.llm)
        if self.response_synthesizer is None or self.judge is None:
            return self._models(Settings.llm)
        return None

    def _reference(self) -> str | None:
        return current_reference() or self.reference

    def _task(
        self,
        bundle: QueryBundle,
        nodes: Sequence[NodeWithScore],
        memories: list[Memory],
        llm: LLM | None,
        *,
        asynchronous: bool,
    ) -> TaskEvaluator | AsyncTaskEvaluator:
        reference = self._reference()
        if reference is None:
            tags = active_instrument_tags.get()
            self._policy.check_reference_keys(tags, "reference", where="instrument tags")
        install_usage_handler()
        keys = present_keys(self.metadata_keys, memories)
        answer = self._answer(bundle, nodes, memories, llm, keys, asynchronous=asynchronous)
        return task_evaluator(
            answer,
            resolve_judge(self._models(self.judge), llm, reference, metadata_keys=keys),
            question=bundle.query_str,
            reference=reference,
            asynchronous=asynchronous,
            judge_context=self.judge_context,
            context=memories,
            deterministic_agent=self._deterministic(llm),
            limiter=self._limiter,
        )

    def _deterministic(self, llm: LLM | None) -> bool:
        if self.deterministic_agent is not None:
            return self.deterministic_agent
        return self.response_synthesizer is None and is_deterministic(llm)

    def _answer(
        self,
        bundle: QueryBundle,
        nodes: Sequence[NodeWithScore],
        memories: list[Memory],
        llm: LLM | None,
        keys: tuple[str, ...],
        *,
        asynchronous: bool,
    ) -> Callable[[tuple[Memory, ...]], str | Awaitable[str]]:
        synth = self.response_synthesizer
        if synth is not None:
            by_id = {m.id: n for m, n in zip(memories, nodes, strict=True)}

            def shown(coalition: tuple[Memory, ...]) -> list[NodeWithScore]:
                return [by_id[m.id] for m in coalition]

            def synthesize(coalition: tuple[Memory, ...]) -> str:
                return _response_text(synth.synthesize(bundle, nodes=shown(coalition)))

            async def asynthesize(coalition: tuple[Memory, ...]) -> str:
                return await _aresponse_text(
                    await synth.asynthesize(bundle, nodes=shown(coalition))
                )

            return asynthesize if asynchronous else synthesize
        if llm is None:  # pragma: no cover - _resolved_llm returns Settings.llm here
            raise ConfigurationError("no task agent: pass llm=... or response_synthesizer=...")
        model = as_text_model(llm)

        def prompt(coalition: tuple[Memory, ...]) -> str:
            return format_answer_prompt(
                bundle.query_str, coalition, template=self.answer_prompt, metadata_keys=keys
            )

        def complete(coalition: tuple[Memory, ...]) -> str:
            return model.complete(prompt(coalition))

        async def acomplete(coalition: tuple[Memory, ...]) -> str:
            return await model.acomplete(prompt(coalition))

        return acomplete if asynchronous else complete

    def _events(self, query_id: str) -> tuple[StageTracker, Callable[[StageEvent], BaseEvent]]:
        tracker = StageTracker(query_id)

        def convert(event: StageEvent) -> BaseEvent:
            if event.phase == "progress":  # no stage boundary: not tracked
                return progress_event(event, query_id=query_id, max_bytes=self.max_event_bytes)
            typed = stage_events(event, query_id=query_id, max_bytes=self.max_event_bytes)
            tracker.see(typed)
            return typed

        return tracker, convert

    def _skip(self, query_id: str) -> list[MeClearStageEvent]:
        base = {"stage": "clearance", "query_id": query_id, "skipped": "empty", "cleared_ids": []}
        return [
            StageTracker.start("clearance", query_id, {**base, "phase": "start"}),
            StageTracker.end("clearance", query_id, {**base, "phase": "end"}),
        ]

    @staticmethod
    def _trace_scope(bundle: QueryBundle, cost: Any = None):
        """The clearance's tracing scope: its query and the parent span.

        Under OpenInference's LlamaIndex instrumentation the parent is the postprocessor's
        span.
        """
        return clearance_scope(
            query=bundle.query_str, framework="llama_index", parent=llama_index_span(), cost=cost
        )

    def _engine_config(self) -> ClearanceConfig:
        """``clearance`` with ``on_failure`` set by the component's own switch, if any."""
        mode = failure_mode(self.clearance, self.on_failure)
        if self.clearance.on_failure == mode:
            return live_config(self.clearance)
        return live_config(self.clearance.model_copy(update={"on_failure": mode}))

    def _failed(
        self, nodes: list[NodeWithScore], ids: list[str], exc: BaseException
    ) -> NodeClearance:
        self._policy.absorb(exc, failure_mode(self.clearance, self.on_failure))
        error = redact(f"{type(exc).__name__}: {exc}")[:500]
        kept = error_nodes(nodes, ids, exc, key=self.metadata_key)
        if not all(isinstance(n, NodeWithScore) for n in kept):
            # fail-open hands back what it was given, even items that are not nodes
            return NodeClearance.model_construct(nodes=kept, report=None, error=error)
        return NodeClearance(nodes=kept, report=None, error=error)

    def _done(
        self, nodes: list[NodeWithScore], ids: list[str], report: ClearanceReport
    ) -> NodeClearance:
        self._policy.report_warning(report)
        kept = annotate(
            nodes,
            ids,
            report,
            key=self.metadata_key,
            policy=self.edge_cases,
            shadow=self.mode == "shadow",
        )
        failure = getattr(report, "failure", None)  # the engine failed open
        error = f"{failure.error_type}: {failure.error}" if failure is not None else None
        return NodeClearance(nodes=kept, report=report, error=error)

    def _declined(
        self, nodes: list[NodeWithScore], ids: list[str], outcome: GateOutcome
    ) -> NodeClearance:
        return NodeClearance(nodes=self._declined_nodes(nodes, ids, outcome), report=outcome.report)

    def _gated(self, done: NodeClearance, outcome: GateOutcome) -> NodeClearance:
        return done.model_copy(update={"nodes": self._with_outcome(done.nodes, outcome)})

    # ------------------------------------------------------------------ sync
    def _clear(self, nodes: list[NodeWithScore], bundle: QueryBundle | None) -> NodeClearance:
        bundle = _require_query(bundle)
        query_id = active_span_id.get() or str(uuid.uuid4())
        if not nodes:
            for event in self._skip(query_id):
                dispatcher.event(event)
            return NodeClearance(nodes=[], report=None)
        llm = self._resolved_llm()  # a missing default model raises before any stage
        ids = node_ids(nodes)
        gate, plan = self._gate(), None
        fields = self._record_fields(llm, self._reference(), query_id)
        tracker, convert = self._events(query_id)
        try:
            memories, _ = to_memories(nodes)  # an unusable node fails open or raises
            ticket = self._guard.admit(memories, self._engine_config())
            if ticket.declined:
                for event in self._guard_events(ticket, query_id):
                    dispatcher.event(event)
                kept = self._guard_nodes(ticket, nodes, ids)
                return NodeClearance(nodes=kept, report=ticket.report)
            with ticket:
                if gate is not None:
                    plan = gate.plan(bundle.query_str, memories, self._engine_config())
                    if not plan.run:
                        for event in self._decline_events(plan, query_id):
                            dispatcher.event(event)
                        outcome = gate.finish(plan, gate.skipped(plan), **fields)
                        return self._declined(nodes, ids, outcome)
                task = self._task(bundle, nodes, memories, llm, asynchronous=False)
                assert isinstance(task, TaskEvaluator)
                meter = UsageMeter()
                # the engine runs its worker threads in a copy of this context (the span)
                engine = MeClearEngine(
                    plan.config if plan is not None else self._engine_config(),
                    listener=lambda e: dispatcher.event(
                        convert(with_event_cost(e, task.calls, meter))
                    ),
                    tracing=self.tracing,
                )
                with self._trace_scope(bundle, cost_source(task, meter)), metering(meter):
                    report = engine.clear(memories, task, prior_harmful=prior_of(plan))
                report = ticket.observe(with_model_calls(report, task.calls, meter))
        except BaseException as exc:
            for event in tracker.closing(exc):
                dispatcher.event(event)
            return self._failed(nodes, ids, exc)
        done = self._done(nodes, ids, report)
        if gate is None or plan is None:
            return done
        return self._gated(done, gate.finish(plan, report, **fields))

    # ------------------------------------------------------------------ async
    async def _aclear(
        self, nodes: list[NodeWithScore], bundle: QueryBundle | None
    ) -> NodeClearance:
        bundle = _require_query(bundle)
        query_id = active_span_id.get() or str(uuid.uuid4())
        if not nodes:
            for event in self._skip(query_id):
                await dispatcher.aevent(event)
            return NodeClearance(nodes=[], report=None)
        llm = self._resolved_llm()  # a missing default model raises before any stage
        ids = node_ids(nodes)
        gate, plan = self._gate(), None
        fields = self._record_fields(llm, self._reference(), query_id)
        tracker, convert = self._events(query_id)

        meter = UsageMeter()
        calls: list[TaskEvaluator | AsyncTaskEvaluator] = []

        async def listener(event: StageEvent) -> None:
            if calls:
                event = with_event_cost(event, calls[0].calls, meter)
            await dispatcher.aevent(convert(event))

        try:
            memories, _ = to_memories(nodes)  # an unusable node fails open or raises
            ticket = self._guard.admit(memories, self._engine_config())
            if ticket.declined:
                for event in self._guard_events(ticket, query_id):
                    await dispatcher.aevent(event)
                kept = self._guard_nodes(ticket, nodes, ids)
                return NodeClearance(nodes=kept, report=ticket.report)
            with ticket:
                if gate is not None:
                    plan = await gate.aplan(bundle.query_str, memories, self._engine_config())
                    if not plan.run:
                        for event in self._decline_events(plan, query_id):
                            await dispatcher.aevent(event)
                        outcome = await gate.afinish(plan, gate.skipped(plan), **fields)
                        return self._declined(nodes, ids, outcome)
                task = self._task(bundle, nodes, memories, llm, asynchronous=True)
                calls.append(task)
                config = plan.config if plan is not None else self._engine_config()
                engine = MeClearEngine(config, listener=listener, tracing=self.tracing)
                with self._trace_scope(bundle, cost_source(task, meter)), metering(meter):
                    report = await engine.aclear(memories, task, prior_harmful=prior_of(plan))
                report = ticket.observe(with_model_calls(report, task.calls, meter))
        except BaseException as exc:
            for event in tracker.closing(exc):
                await dispatcher.aevent(event)
            return self._failed(nodes, ids, exc)
        done = self._done(nodes, ids, report)
        if gate is None or plan is None:
            return done
        return self._gated(done, await gate.afinish(plan, report, **fields))


def _bundle(query: str | QueryBundle) -> QueryBundle:
    return QueryBundle(query) if isinstance(query, str) else query


def _require_query(bundle: QueryBundle | str | None) -> QueryBundle:
    if isinstance(bundle, str):  # some callers pass the query text as the bundle
        return QueryBundle(bundle)
    if bundle is None:
        raise ConfigurationError(
            "MeClearPostprocessor needs the query: call postprocess_nodes(nodes, "
            "query_str=...) or use it inside a query engine"
        )
    return bundle
