"""MeClearPostprocessor: verified clearance of the retrieved nodes inside any query engine.

``index.as_query_engine(node_postprocessors=[MeClearPostprocessor(llm=llm)])`` (or a
``RetrieverQueryEngine``, or ``postprocess_nodes`` on its own) runs the MeClear engine on
the frozen retrieved context (Eq. 6): the task agent answers the query from coalitions of
the nodes, a judge scores each answer (the evaluator of Eq. 2), and the nodes whose
removal is verified to recover the answer are dropped (Eq. 18-20). Kept nodes come back
in their original order as new ``NodeWithScore`` objects with the per-memory results
under ``metadata["meclear"]`` (see ``nodes`` and ``meclear_integrations.runtime.payloads``).

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

Agent memory: inside a :class:`~meclear_integrations.llama_index.memory.MeClearMemoryBlock`
(a ``VectorMemoryBlock``) the question is the latest user message, not the block's query
text (the recent messages joined).

Edge cases (the policy of ``meclear_integrations.runtime.payloads``): no nodes -> ``[]``, no model
call, one clearance start/end pair with ``payload["skipped"] == "empty"``; every node
cleared -> ``[]`` (``documents.edge_cases.all_cleared="keep_all"`` returns them all, marked);
identical texts -> separate memories with distinct ids.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 2, 6, 18-20.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from contextlib import ExitStack
from functools import partial
from typing import Any, ClassVar, TypeVar

from llama_index.core import Settings
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.dispatcher import active_instrument_tags
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.span import active_span_id
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.response_synthesizers import BaseSynthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..core.errors import ConfigurationError
from ..core.events import StageEvent
from ..core.memory import Memory
from ..core.redaction import redact
from ..core.report import ClearanceReport
from ..guard.policy import (
    is_deterministic,
)
from ..jobs.protocol import AuditOutcome
from ..jobs.snapshot import AuditSnapshot
from ..judges.answer_prompts import (
    DEFAULT_ANSWER_PROMPT,
    format_answer_prompt,
    present_keys,
)
from ..judges.task import AsyncTaskEvaluator, TaskEvaluator, task_evaluator
from ..pipeline import FlowEvent, FlowResult, QuerySettings, clearance_flow, run_async, run_sync
from ..pipeline.audit import (
    audit_outcome,
)
from ..pipeline.component import ClearingComponent
from ..pipeline.flow import EngineJob
from ..pipeline.settings import DEFAULT_REFERENCE_KEY
from ..pipeline.shaping import model_name
from ..pipeline.steps import Call, Clear, Flow, Steps
from ..telemetry import clearance_scope
from ..telemetry.parents import llama_index_span
from .events import (
    MeClearStageEvent,
    StageTracker,
    internal_run_tags,
    progress_event,
    stage_events,
)
from .judges import resolve_judge
from .memory import current_memory_question
from .model import as_text_model
from .nodes import _copy as copy_node
from .nodes import error_nodes, node_ids, to_memories
from .reference import current_reference, query_reference
from .usage import install_usage_handler

__all__ = ["MeClearPostprocessor", "NodeClearance", "dispatcher"]

dispatcher = get_dispatcher(__name__)
"""The dispatcher of the postprocessor's spans and stage events."""


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


class MeClearPostprocessor(ClearingComponent, BaseNodePostprocessor):
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
        limits: ``circuit_breaker`` (skips clearance for a cool-down after consecutive
            provider failures; default ``CircuitBreaker()``: 3 failures, 30 s; None: off),
            ``limiter`` (a ``CallLimiter`` bounding the model calls in flight across
            queries; share one instance to bound several components) or
            ``max_calls_in_flight`` (a limiter of this component's own), and
            ``max_event_bytes`` (the size cap of each event payload).
        on_failure: ``"open"`` (documents unchanged and a ``FailOpenWarning`` on
            transient failures) or ``"closed"``; None follows ``clearance.on_failure``.
        loop: ``trigger`` (when to clear, ``meclear_integrations.triggers``; None clears
            every query), ``ledger`` (a ``HarmLedger`` recording every decision),
            ``audit_queue`` and ``audit_workers`` (background mode).
        answer_prompt: The default agent's prompt template.
        documents: ``metadata_key`` (the metadata key of the per-memory results),
            ``metadata_keys`` (node metadata rendered with each memory for the default
            agent and the reference-free judge; None: common time and source keys),
            ``judge_context`` (every retrieved node, default, or only the coalition the
            agent saw) and ``edge_cases`` (the policy when every node is cleared).
        deterministic_agent: Ask the agent once per coalition across trials (None: when
            the LLM declares temperature 0).
        mode: ``"clear"``, ``"shadow"`` (annotate and emit events, drop nothing) or
            ``"background"`` (no model call on the request path; needs ``loop.ledger``).
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
    answer_prompt: str = Field(
        default=DEFAULT_ANSWER_PROMPT,
        description=(
            "Default agent's prompt template (placeholders ``{memories}``, ``{question}``)."
        ),
    )
    role_settings: ClassVar[dict[str, str]] = {
        "agent": "llm= or response_synthesizer=",
        "judge": "judge= (or llm=)",
        "evaluator": "response_synthesizer=",
    }
    also_accepted: ClassVar[tuple[str, ...]] = ("class_name",)

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearPostprocessor"

    @model_validator(mode="after")
    def _reference_comes_with_the_query(self) -> MeClearPostprocessor:
        if self.documents.reference_key != DEFAULT_REFERENCE_KEY:
            raise ConfigurationError(
                "MeClearPostprocessor takes the reference from reference=... or "
                "query_reference(...), not from a key: leave documents.reference_key unset"
            )
        return self

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
        self,
        nodes: Sequence[NodeWithScore],
        query: str | QueryBundle | None = None,
        *,
        query_str: str | None = None,
    ) -> NodeClearance:
        """Clear ``nodes`` for ``query`` and return the nodes with the engine's report.

        Args:
            nodes: The retrieved nodes.
            query: The query text or bundle.
            query_str: The query text, as ``postprocess_nodes`` spells it (give one of the two).

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
        return self._clear(list(nodes), _bundle(_one_query(query, query_str)))

    @dispatcher.span
    async def aclear_nodes(
        self,
        nodes: Sequence[NodeWithScore],
        query: str | QueryBundle | None = None,
        *,
        query_str: str | None = None,
    ) -> NodeClearance:
        """Async :meth:`clear_nodes` (same arguments, result, errors; agent and judge awaited)."""
        return await self._aclear(list(nodes), _bundle(_one_query(query, query_str)))

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
        keys = present_keys(self.documents.metadata_keys, memories)
        answer = self._answer(bundle, nodes, memories, llm, keys, asynchronous=asynchronous)
        return task_evaluator(
            answer,
            resolve_judge(self._models(self.judge), llm, reference, metadata_keys=keys),
            question=bundle.query_str,
            reference=reference,
            asynchronous=asynchronous,
            judge_context=self.documents.judge_context,
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

        max_bytes = self.limits.max_event_bytes

        def convert(event: StageEvent) -> BaseEvent:
            if event.phase == "progress":  # no stage boundary: not tracked
                return progress_event(event, query_id=query_id, max_bytes=max_bytes)
            typed = stage_events(event, query_id=query_id, max_bytes=max_bytes)
            tracker.see(typed)
            return typed

        return tracker, convert

    @staticmethod
    def _trace_scope(bundle: QueryBundle, cost: Any = None):
        """The clearance's tracing scope: its query and the parent span.

        Under OpenInference's LlamaIndex instrumentation the parent is the postprocessor's
        span.
        """
        return clearance_scope(
            query=bundle.query_str, framework="llama_index", parent=llama_index_span(), cost=cost
        )

    def _settings(self, llm: LLM | None, query_id: str) -> QuerySettings:
        """What this query runs with: config, guard, gate and the ledger fields."""
        reference = self._reference()
        record: dict[str, Any] = {
            "success_signal": "reference" if reference is not None else "judge",
            "agent_model": model_name(llm),
            "judge_model": model_name(self.judge if self.judge is not None else llm),
            "trace_run_id": query_id,
            "trace_system": "llama_index",
        }
        if reference is not None:  # kept by a text ledger for re-verification
            record["extra"] = {"reference": reference}
        return self._query_settings(record)

    def _flow(
        self, bundle: QueryBundle, nodes: list[NodeWithScore], settings: QuerySettings
    ) -> Flow:
        """The query's flow: cleared now, or in the background."""

        def load() -> list[Memory]:
            return to_memories(nodes)[0]  # an unusable node fails open or raises

        extra = {"reference": self._reference()} if self.mode == "background" else {}
        return self._query_flow(bundle.query_str, len(nodes), load, settings, extra)

    def _replay_tools(self) -> tuple[Any, Any]:
        """``(resolve, evaluator_for)`` re-verifying through this component (``jobs.reverify``)."""
        from .feedback import _replay_tools

        return _replay_tools(self, None)

    def audit(self, snapshot: AuditSnapshot, *, run_id: str) -> AuditOutcome:
        """One background audit (:meth:`ClearingComponent.audit`) with LlamaIndex nodes."""
        nodes = [
            NodeWithScore(node=TextNode(id_=m.id, text=m.content, metadata=dict(m.metadata)))
            for m in snapshot.memories
        ]
        bundle = QueryBundle(snapshot.query)
        with ExitStack() as stack:
            stack.enter_context(internal_run_tags())  # the whole audit is internal
            if snapshot.reference is not None:
                stack.enter_context(query_reference(snapshot.reference))
            llm = self._resolved_llm()
            host = _SyncHost(self, bundle, nodes, llm, run_id)
            settings = self._audit_settings(self._settings(llm, run_id), snapshot, run_id)
            flow = clearance_flow(
                snapshot.query, len(nodes), lambda: to_memories(nodes)[0], settings
            )
            return audit_outcome(run_sync(flow, host))

    def _failed(
        self, nodes: list[NodeWithScore], ids: list[str], exc: BaseException
    ) -> NodeClearance:
        self._absorb(exc)
        error = redact(f"{type(exc).__name__}: {exc}")[:500]
        kept = error_nodes(nodes, ids, exc, key=self.documents.metadata_key)
        if not all(isinstance(n, NodeWithScore) for n in kept):
            # fail-open hands back what it was given, even items that are not nodes
            return NodeClearance.model_construct(nodes=kept, report=None, error=error)
        return NodeClearance(nodes=kept, report=None, error=error)

    def _result(
        self, result: FlowResult, nodes: list[NodeWithScore], ids: list[str]
    ) -> NodeClearance:
        """The clearance of a result that is not a failure."""
        report, error = result.report, None
        chosen = self._chosen(result, ids)
        if result.kind == "cleared" and report is not None:
            failure = getattr(report, "failure", None)  # the engine failed open
            error = f"{failure.error_type}: {failure.error}" if failure is not None else None
        key = self.documents.metadata_key
        kept = [copy_node(nodes[i], key, meta) for i, meta in chosen]
        return NodeClearance(nodes=kept, report=report, error=error)

    # ------------------------------------------------------------------ the query
    def _clear(self, nodes: list[NodeWithScore], bundle: QueryBundle | None) -> NodeClearance:
        host = self._host(_SyncHost, nodes, bundle)
        return run_sync(self._query(host), host)

    async def _aclear(
        self, nodes: list[NodeWithScore], bundle: QueryBundle | None
    ) -> NodeClearance:
        host = self._host(_AsyncHost, nodes, bundle)
        return await run_async(self._query(host), host)

    def _host(
        self, kind: type[HostT], nodes: list[NodeWithScore], bundle: QueryBundle | None
    ) -> HostT:
        bundle = _question(bundle)
        query_id = active_span_id.get() or str(uuid.uuid4())
        # a missing default model raises before any stage (background mode needs none)
        llm = self._resolved_llm() if nodes and self.mode != "background" else None
        return kind(self, bundle, nodes, llm, query_id)

    def _query(self, host: _SyncHost) -> Steps[NodeClearance]:
        """One query, sync or async: the flow, then the nodes (a failure closes its stages)."""
        nodes = host.nodes
        ids = node_ids(nodes)
        settings = self._settings(host.llm, host.query_id)
        result = yield from self._flow(host.bundle, nodes, settings)
        if result.kind == "failed":
            assert result.error is not None
            for event in host.tracker.closing(result.error):
                yield Call(partial(dispatcher.event, event), partial(dispatcher.aevent, event))
            return self._failed(nodes, ids, result.error)
        return self._result(result, nodes, ids)

    def _engine_job(
        self,
        bundle: QueryBundle,
        nodes: list[NodeWithScore],
        llm: LLM | None,
        emit: Callable[[StageEvent], Any],
        request: Clear,
        *,
        asynchronous: bool,
    ) -> EngineJob:
        """The engine run of one query: the task evaluator is what the engine calls.

        On the sync path the engine runs its worker threads in a copy of this context
        (the span).
        """
        memories = list(request.memories)
        task = self._task(bundle, nodes, memories, llm, asynchronous=asynchronous)
        return EngineJob(
            request, task, task, emit, lambda cost: self._trace_scope(bundle, cost), self.tracing
        )


HostT = TypeVar("HostT", bound="_SyncHost")


def _events_of(event: FlowEvent, query_id: str) -> list[MeClearStageEvent]:
    """The start/end pair of a clearance event with no engine stage behind it."""
    end = {**event.payload, "query_id": query_id}
    return [
        StageTracker.start("clearance", query_id, {**end, "phase": "start"}),
        StageTracker.end("clearance", query_id, end),
    ]


class _SyncHost:
    """The sync driver's host: LlamaIndex events and the engine inside the span."""

    def __init__(
        self,
        owner: MeClearPostprocessor,
        bundle: QueryBundle,
        nodes: list[NodeWithScore],
        llm: LLM | None,
        query_id: str,
    ) -> None:
        self.owner, self.bundle, self.nodes, self.llm = owner, bundle, nodes, llm
        self.query_id = query_id
        self.tracker, self.convert = owner._events(query_id)

    def notify(self, event: FlowEvent) -> None:
        for typed in _events_of(event, self.query_id):
            dispatcher.event(typed)

    def engine_job(self, request: Clear) -> EngineJob:
        return self.owner._engine_job(
            self.bundle, self.nodes, self.llm, self.emit, request, asynchronous=False
        )

    def emit(self, event: StageEvent) -> None:
        dispatcher.event(self.convert(event))


class _AsyncHost(_SyncHost):
    """The async driver's host (see :class:`_SyncHost`)."""

    async def notify(self, event: FlowEvent) -> None:  # type: ignore[override]
        for typed in _events_of(event, self.query_id):
            await dispatcher.aevent(typed)

    def engine_job(self, request: Clear) -> EngineJob:
        return self.owner._engine_job(
            self.bundle, self.nodes, self.llm, self.aemit, request, asynchronous=True
        )

    async def aemit(self, event: StageEvent) -> None:
        await dispatcher.aevent(self.convert(event))


def _bundle(query: str | QueryBundle) -> QueryBundle:
    return QueryBundle(query) if isinstance(query, str) else query


def _one_query(query: str | QueryBundle | None, query_str: str | None) -> str | QueryBundle:
    """The query of ``clear_nodes``: ``query=`` or ``query_str=`` (both spellings accepted)."""
    if (query is None) == (query_str is None):
        raise ConfigurationError("clear_nodes needs the query: pass query=... or query_str=...")
    return query if query is not None else query_str  # type: ignore[return-value]


def _question(bundle: QueryBundle | str | None) -> QueryBundle:
    """The query to clear for: inside a ``MeClearMemoryBlock``, the latest user message."""
    question = current_memory_question()
    return QueryBundle(question) if question is not None else _require_query(bundle)


def _require_query(bundle: QueryBundle | str | None) -> QueryBundle:
    if isinstance(bundle, str):  # some callers pass the query text as the bundle
        return QueryBundle(bundle)
    if bundle is None:
        raise ConfigurationError(
            "MeClearPostprocessor needs the query: call postprocess_nodes(nodes, "
            "query_str=...) or use it inside a query engine"
        )
    return bundle
