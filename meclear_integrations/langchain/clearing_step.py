"""The clearance step shared by the retriever and the compressor.

One call = one chain run named ``meclear_clearance`` under the caller's run. Under it:

- one ``meclear_evaluate`` run per evaluator call (inputs: memory ids and trial; outputs:
  the answer, the score and how the verdict was read), holding the agent's and the judge's
  model runs as children;
- the custom events ``meclear.screening``, ``meclear.attribution``,
  ``meclear.interactions`` (when enabled) and ``meclear.clearance``, one per stage start,
  end or error, and ``meclear.progress`` for the engine's progress events (each batch of
  evaluator calls: stage, calls done / total, elapsed, model calls so far), sent with
  ``dispatch_custom_event`` / ``adispatch_custom_event`` and
  ``config={"callbacks": <clearance run>.get_child()}`` (so their ``run_id`` is the
  clearance run). Payloads: :func:`~meclear_integrations.runtime.payloads.stage_event_payload`
  (``stage``, ``phase``, ``query_id`` and the engine's stage payload: LOO effects and
  labels; Shapley values, intervals and ranks, harmful ids; candidates; cleared and kept
  ids, verified recovery, cost), capped at ``limits.max_event_bytes``;
- the run's outputs: the bounded :func:`~meclear_integrations.runtime.payloads.report_summary`
  (what LangSmith stores, since it does not store custom events).

Failures (``on_failure``, see ``meclear_integrations.guard.policy``): by default
(``"open"``) clearance fails open on what retrying can heal: when the engine cannot finish
(an agent or judge call still failing transiently after its retries, an unreadable reply,
the budget ran out, too many documents, the inner retriever returned an item that is not a
``Document`` with text: ``InvalidRetrievalError``) every retrieved document is returned
unchanged in content, in order, with ``status: "failed"`` and ``failure`` (reason,
redacted error) under the metadata key (an unusable item is returned as it came); the
engine's ``error`` event (``outcome: "fail_open"``), or a ``meclear.clearance`` ``error``
event for failures outside the engine, says why, and a ``FailOpenWarning`` is issued once
per reason per instance. ``on_failure="closed"`` fails closed. Failures retrying cannot
heal (HTTP 400/401/403/404, a bug in the agent or judge) raise ``PermanentFailureError``
on the first query, and configuration errors (no reference for a reference judge, an
unusable config) always raise. Error texts in events, trace outputs (the agent's answers
in the ``meclear_evaluate`` outputs included) and errors recorded on the ``meclear_*`` runs
are redacted (no API keys or authorization headers).

The agent (``agent`` runnable, or ``llm`` behind the default answer prompt) receives
``{"question": str, "context": str, "documents": list[Document]}``: ``context`` is the
coalition rendered by :func:`~meclear_integrations.judges.answer_prompts.render_memories`,
``documents`` the coalition's original documents in retrieval order. It must return text,
a message, or a dict with an ``answer`` entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from langchain_core.callbacks import (
    AsyncCallbackManager,
    AsyncCallbackManagerForChainRun,
    CallbackManager,
    CallbackManagerForChainRun,
    Callbacks,
)
from langchain_core.callbacks.manager import adispatch_custom_event, dispatch_custom_event
from langchain_core.documents import Document
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from pydantic import ConfigDict, model_validator

from ..core.errors import ConfigurationError, InconsistentVerdictsError
from ..pipeline.component import ClearingComponent

if TYPE_CHECKING:
    # The method bodies import what they call on first use, so importing the retriever
    # loads the component's fields and no engine, judge or flow (tools/import_cost.py).
    from ..core.events import StageEvent
    from ..core.memory import Memory
    from ..jobs.protocol import AuditOutcome
    from ..jobs.snapshot import AuditSnapshot
    from ..judges.task import AsyncTaskEvaluator, TaskEvaluator, TaskRecord
    from ..pipeline import FlowEvent, FlowResult, QuerySettings
    from ..pipeline.flow import EngineJob
    from ..pipeline.steps import Clear, Flow, Steps

__all__ = ["CLEARANCE_RUN_NAME", "EVALUATE_RUN_NAME", "ClearanceSettings", "default_agent"]

CLEARANCE_RUN_NAME = "meclear_clearance"
"""Name of the chain run that holds one clearance."""
EVALUATE_RUN_NAME = "meclear_evaluate"
"""Name of the chain run of one evaluator call (agent + judge)."""
AUDIT_RUN_NAME = "meclear_audit"
"""Name of the chain run of one background audit."""
ANSWER_METADATA_KEY = "meclear_answer"
"""Config-metadata key of the chain's answer, kept in a background audit's snapshot."""
FEEDBACK_METADATA_KEY = "meclear_feedback"
"""Config-metadata key of the user's feedback, kept in a background audit's snapshot."""


def _redacted(exc: Exception) -> Exception:
    """``sanitize(exc)``, keeping the recorded role and the reason of an abstention."""
    from ..core.failures.faults import sanitize
    from ..core.failures.kind import failure_role, mark_role
    from ..core.redaction import redact

    if isinstance(exc, InconsistentVerdictsError):
        return InconsistentVerdictsError(redact(str(exc))[:2000], reason=exc.reason)
    redacted = sanitize(exc)
    role = failure_role(exc)
    if role is not None:
        mark_role(redacted, role)  # type: ignore[arg-type]
    return redacted


def default_agent(llm: Runnable) -> Runnable:
    """The default answer prompt (``prompts.DEFAULT_ANSWER_PROMPT``) piped into ``llm``.

    Args:
        llm: The task agent's model.

    Returns:
        A runnable named ``meclear_agent`` that takes ``{"question", "context", ...}``.
    """
    from ..judges.answer_prompts import DEFAULT_ANSWER_PROMPT, neutralize_tags

    def prompt(inputs: dict[str, Any]) -> str:
        return DEFAULT_ANSWER_PROMPT.format(
            memories=inputs["context"], question=neutralize_tags(inputs["question"])
        )

    async def aprompt(inputs: dict[str, Any]) -> str:
        return prompt(inputs)

    chain = RunnableLambda(prompt, afunc=aprompt, name="meclear_answer_prompt") | llm
    return chain.with_config(run_name="meclear_agent")


class ClearanceSettings(ClearingComponent):
    """Fields and the clearance step shared by ``ClearingRetriever`` and the compressor.

    Not used directly: see :class:`~meclear_integrations.langchain.ClearingRetriever` and
    :class:`~meclear_integrations.langchain.MeClearCompressor` for the fields.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    llm: Runnable | None = None
    """Task agent behind the default answer prompt and, unless ``judge`` is set, the judge
    model (any chat model / LLM runnable that takes a prompt string)."""
    agent: Runnable | None = None
    """Your own answer chain, overriding ``llm`` as the agent: it receives
    ``{"question", "context", "documents"}`` and returns text, a message or
    ``{"answer": ...}``."""
    judge: Any = None
    """A ``Judge``, a LangChain model, a function (``CallableJudge``) or None (``llm``). A
    model judges against the reference when the query has one, reference-free otherwise."""
    role_settings: ClassVar[dict[str, str]] = {
        "agent": "llm= or agent=",
        "judge": "judge= (or llm=)",
        "evaluator": "agent=",
    }

    @model_validator(mode="after")
    def _needs_an_agent(self) -> ClearanceSettings:
        if self.agent is None and self.llm is None:
            raise ConfigurationError("pass llm=... (or agent=...) as the task agent")
        if self.judge is None and self.llm is None:
            raise ConfigurationError("pass judge=... (or llm=...) to judge the agent's answers")
        return self

    # ------------------------------------------------------------------ pieces
    def _agent(self) -> Runnable:
        if self.agent is not None:
            return self.agent
        return default_agent(self._models(self.llm))

    def _task(
        self,
        query: str,
        documents: Sequence[Document],
        memories: list[Memory],
        reference: str | None,
        *,
        asynchronous: bool,
    ) -> TaskEvaluator | AsyncTaskEvaluator:
        from ..judges.answer_prompts import present_keys, render_memories
        from ..judges.task import task_evaluator
        from .judges import resolve_judge
        from .model import ainvoke_off_loop, message_text

        agent = self._agent()
        by_id = {m.id: d for m, d in zip(memories, documents, strict=True)}
        keys = present_keys(self.documents.metadata_keys, memories)

        def inputs(coalition: tuple[Memory, ...]) -> dict[str, Any]:
            return {
                "question": query,
                "context": render_memories(coalition, metadata_keys=keys),
                "documents": [by_id[m.id] for m in coalition],
            }

        def answer(coalition: tuple[Memory, ...]) -> str:
            return message_text(agent.invoke(inputs(coalition)))

        async def aanswer(coalition: tuple[Memory, ...]) -> str:
            # a sync-only agent runs on a daemon worker, never on an executor thread that
            # asyncio.run joins (a hung provider call would outlive every deadline)
            return message_text(await ainvoke_off_loop(agent, inputs(coalition)))

        return task_evaluator(
            aanswer if asynchronous else answer,
            resolve_judge(
                self._models(self.judge), self._models(self.llm), reference, metadata_keys=keys
            ),
            question=query,
            reference=reference,
            judge_context=self.documents.judge_context,
            context=memories,
            deterministic_agent=self._deterministic(),
            limiter=self._limiter,
        )

    def _deterministic(self) -> bool:
        from ..guard.policy import is_deterministic

        if self.deterministic_agent is not None:
            return self.deterministic_agent
        return self.agent is None and is_deterministic(self.llm)

    @staticmethod
    def _outputs(record: TaskRecord) -> dict[str, Any]:
        from ..core.redaction import redact

        return {
            "answer": redact(record.answer)[:1000],  # the agent may echo a memory's secret
            "score": record.verdict.score,
            "parsed_by": record.verdict.parsed_by,
        }

    @staticmethod
    def _failure_event(exc: BaseException) -> dict[str, Any]:
        from ..runtime.payloads import exception_summary

        return {
            "stage": "clearance",
            "phase": "error",
            "outcome": "fail_open",
            "error_type": type(exc).__name__,
            "failure": exception_summary(exc),
        }

    def _payload(self, event: StageEvent, run_id: str) -> dict[str, Any]:
        from ..runtime.payloads import stage_event_payload

        return stage_event_payload(event, query_id=run_id, max_bytes=self.limits.max_event_bytes)

    def _reference(self, metadata: dict[str, Any] | None) -> str | None:
        from .reference import reference_from_metadata

        key = self.documents.reference_key
        reference = reference_from_metadata(metadata, key)
        if reference is None:
            self._policy.check_reference_keys(metadata, key, where="config metadata")
        return reference

    @staticmethod
    def _trace_scope(query: str, run: Any, cost: Any = None):
        """The clearance's tracing scope: its query, the parent span and the cost source.

        Under OpenInference's LangChain instrumentation the parent is the retriever's span
        (the clearance run makes no span there: ``volume.clearance_run_context``).
        """
        from ..telemetry import clearance_scope
        from ..telemetry.parents import langchain_run_span

        parent = langchain_run_span(run.run_id, run.parent_run_id)
        return clearance_scope(query=query, framework="langchain", parent=parent, cost=cost)

    @staticmethod
    def _start_inputs(query: str, ids: list[str], reference: str | None) -> dict[str, Any]:
        return {"query": query, "memory_ids": ids, "reference_given": reference is not None}

    # ------------------------------------------------------------------ the flow
    def _settings(self, reference: str | None, run: AnyRun) -> QuerySettings:
        """What this query runs with: config, guard, gate and the ledger fields."""
        from ..pipeline.shaping import model_name

        judge = self.judge if self.judge is not None else self.llm
        record: dict[str, Any] = {
            "success_signal": "reference" if reference is not None else "judge",
            "agent_model": model_name(self.agent if self.agent is not None else self.llm),
            "judge_model": model_name(judge),
            "trace_run_id": trace_id(run),
            "trace_system": "langchain",
        }
        if reference is not None:  # kept by a text ledger for re-verification
            record["extra"] = {"reference": reference}
        return self._query_settings(record)

    def _flow(
        self,
        query: str,
        documents: Sequence[Document],
        settings: QuerySettings,
        metadata: dict[str, Any] | None,
    ) -> Flow:
        """The query's flow: cleared now, or in the background."""
        from .documents import to_memories

        def load() -> list[Memory]:
            return to_memories(documents)[0]  # a bad item fails open or raises

        extra = {}
        if self.mode == "background":
            extra = {
                "reference": self._reference(metadata),
                "answer": (metadata or {}).get(ANSWER_METADATA_KEY),
                "feedback": (metadata or {}).get(FEEDBACK_METADATA_KEY),
            }
        return self._query_flow(query, len(documents), load, settings, extra)

    def _replay_tools(self) -> tuple[Any, Any]:
        """``(resolve, evaluator_for)`` re-verifying through this component (``jobs.reverify``)."""
        from .feedback import _replay_tools

        return _replay_tools(self, None)

    def audit(self, snapshot: AuditSnapshot, *, run_id: str) -> AuditOutcome:
        """One background audit (:meth:`ClearingComponent.audit`) under a LangChain run."""
        from ..pipeline import clearance_flow, run_sync
        from ..pipeline.audit import audit_outcome
        from .documents import to_memories
        from .volume import INTERNAL_TAG, USAGE_CALLBACK

        documents = [
            Document(page_content=m.content, metadata=dict(m.metadata), id=m.id)
            for m in snapshot.memories
        ]
        manager = CallbackManager.configure()
        manager.add_handler(USAGE_CALLBACK, inherit=True)
        manager.add_tags([INTERNAL_TAG], inherit=True)  # the whole audit is internal
        run = manager.on_chain_start(
            None, {"query_id": snapshot.query_id, "job_id": run_id}, name=AUDIT_RUN_NAME
        )
        settings = self._audit_settings(self._settings(snapshot.reference, run), snapshot, run_id)
        flow = clearance_flow(
            snapshot.query, len(documents), lambda: to_memories(documents)[0], settings
        )
        host = _SyncHost(self, snapshot.query, documents, run, snapshot.reference)
        outcome = audit_outcome(run_sync(flow, host))
        run.on_chain_end({"audit": outcome.state, "ledger_run_id": outcome.ledger_run_id})
        return outcome

    def _returned(
        self, result: FlowResult, documents: Sequence[Document], ids: list[str]
    ) -> list[Document]:
        """The documents to return for a result that is not a failure."""
        key = self.documents.metadata_key
        return [_copy(documents[i], key, meta) for i, meta in self._chosen(result, ids)]

    def _ended(self, result: FlowResult) -> dict[str, Any] | None:
        """The clearance run's outputs when the flow ended it itself (None: not yet)."""
        from ..runtime.payloads import report_summary

        if result.kind == "cleared" and result.report is not None:
            return report_summary(result.report, max_bytes=self.limits.max_event_bytes)
        return None

    # ------------------------------------------------------------------ the query
    def _clear_documents(
        self, query: str, documents: Sequence[Document], callbacks: Callbacks
    ) -> list[Document]:
        from ..pipeline import run_sync

        host = _SyncHost(self, query, documents)
        return run_sync(self._query(host, CallbackManager, callbacks), host)

    async def _aclear_documents(
        self, query: str, documents: Sequence[Document], callbacks: Callbacks
    ) -> list[Document]:
        from ..pipeline import run_async

        host = _AsyncHost(self, query, documents)
        return await run_async(self._query(host, AsyncCallbackManager, callbacks), host)

    def _query(
        self,
        host: _SyncHost,
        manager_type: type[CallbackManager] | type[AsyncCallbackManager],
        callbacks: Callbacks,
    ) -> Steps[list[Document]]:
        """One query, sync or async: open the clearance run, drive the flow, close the run."""
        from ..core.failures.faults import sanitize
        from ..pipeline.steps import Call
        from ..runtime.payloads import event_name
        from .documents import document_ids, error_documents
        from .volume import USAGE_CALLBACK, clearance_run_context

        query, documents = host.query, host.documents
        manager = manager_type.configure(inheritable_callbacks=callbacks)
        manager.add_handler(USAGE_CALLBACK, inherit=True)
        reference = host.reference = self._reference(manager.metadata)
        ids = document_ids(documents)
        inputs = self._start_inputs(query, ids, reference)
        with clearance_run_context(self.tracing):
            run = host.run = yield Call.on_both(
                lambda: manager.on_chain_start(None, inputs, name=CLEARANCE_RUN_NAME)
            )
        settings = self._settings(reference, run)
        result = yield from self._flow(query, documents, settings, manager.metadata)
        if result.kind == "failed":
            exc = result.error
            assert exc is not None
            error = sanitize(exc) if isinstance(exc, Exception) else exc
            yield Call.on_both(lambda: run.on_chain_error(error))
            self._absorb(exc)
            dispatch = adispatch_custom_event if host.asynchronous else dispatch_custom_event
            event = self._failure_event(exc)
            yield Call.on_both(
                lambda: dispatch(
                    event_name("clearance"), event, config={"callbacks": run.get_child()}
                )
            )
            return error_documents(documents, ids, exc, key=self.documents.metadata_key)
        outputs = self._ended(result)
        if outputs is not None:
            yield Call.on_both(lambda: run.on_chain_end(outputs))
        return self._returned(result, documents, ids)

    # ------------------------------------------------------------------ the engine
    def _engine_job(
        self,
        run: AnyRun,
        query: str,
        documents: Sequence[Document],
        reference: str | None,
        request: Clear,
    ) -> EngineJob:
        """The engine run of one query, sync or async as ``run`` is.

        Its evaluator calls are ``meclear_evaluate`` runs and its stage events custom
        events under the clearance run.
        """
        from ..core.concurrency.step_driver import arun_steps, run_steps
        from ..pipeline.flow import EngineJob
        from ..pipeline.steps import Call
        from ..runtime.payloads import stage_event_name
        from .volume import evaluation_callbacks, failure_run

        asynchronous = isinstance(run, AsyncCallbackManagerForChainRun)
        memories = list(request.memories)
        task = self._task(query, documents, memories, reference, asynchronous=asynchronous)
        evaluation = self._evaluation(task, {m.id: m for m in memories})
        detail, run_id = self.tracing.detail, str(run.run_id)
        callbacks = evaluation_callbacks(run, detail)

        def arguments(coalition: tuple[Memory, ...], trial: int) -> dict[str, Any]:
            return {"memory_ids": [m.id for m in coalition], "trial": trial}

        def evaluating(coalition: tuple[Memory, ...], trial: int) -> Steps[float]:
            """One ``meclear_evaluate`` run; a failed one recorded as the trace volume says."""
            inputs = arguments(coalition, trial)
            config: RunnableConfig = {"callbacks": callbacks}
            try:
                result = yield Call(
                    partial(evaluation.invoke, inputs, config=config),
                    partial(evaluation.ainvoke, inputs, config=config),
                )
            except Exception as exc:
                yield from failure_run(run, detail, EVALUATE_RUN_NAME, inputs, exc)
                raise
            score: float = result["score"]
            return score

        def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
            return run_steps(evaluating(coalition, trial))

        async def aevaluate(coalition: tuple[Memory, ...], trial: int) -> float:
            return await arun_steps(evaluating(coalition, trial))

        def emit(event: StageEvent) -> Any:
            dispatch = adispatch_custom_event if asynchronous else dispatch_custom_event
            return dispatch(
                stage_event_name(event),
                self._payload(event, run_id),
                config={"callbacks": run.get_child()},
            )

        return EngineJob(
            request,
            task,
            aevaluate if asynchronous else evaluate,
            emit,
            lambda cost: self._trace_scope(query, run, cost),
            self.tracing,
        )

    def _evaluation(
        self, task: TaskEvaluator | AsyncTaskEvaluator, by_ids: dict[str, Memory]
    ) -> Runnable:
        """The ``meclear_evaluate`` runnable: one agent and judge call, errors redacted."""
        from ..judges.task import AsyncTaskEvaluator

        def outputs(inputs: dict[str, Any]) -> tuple[tuple[Memory, ...], int]:
            return tuple(by_ids[i] for i in inputs["memory_ids"]), inputs["trial"]

        if isinstance(task, AsyncTaskEvaluator):

            async def astep(inputs: dict[str, Any]) -> dict[str, Any]:
                try:
                    return self._outputs(await task.arun(*outputs(inputs)))
                except Exception as exc:  # recorded on the run: redacted, no chained original
                    raise _redacted(exc) from None

            return RunnableLambda(astep, name=EVALUATE_RUN_NAME)

        def step(inputs: dict[str, Any]) -> dict[str, Any]:
            try:
                return self._outputs(task.run(*outputs(inputs)))
            except Exception as exc:  # recorded on the run: redacted, no chained original
                raise _redacted(exc) from None

        return RunnableLambda(step, name=EVALUATE_RUN_NAME)


AnyRun = CallbackManagerForChainRun | AsyncCallbackManagerForChainRun


def trace_id(run: AnyRun) -> str:
    """The LangSmith trace (root run) id when a tracer follows ``run``, else its own id.

    Args:
        run: The clearance run's manager.

    Returns:
        The trace id.
    """
    for handler in getattr(run, "handlers", []):
        tracked = getattr(handler, "run_map", {}).get(str(run.run_id))
        root = getattr(tracked, "trace_id", None)
        if root is not None:
            return str(root)
    return str(run.run_id)


def _copy(document: Document, key: str, value: dict[str, Any]) -> Document:
    return Document(
        page_content=document.page_content,
        metadata={**document.metadata, key: value},
        id=document.id,
    )


class _SyncHost:
    """The sync driver's host: LangChain events and the engine under the clearance run.

    ``run`` and ``reference`` are set when the query opens its clearance run.
    """

    asynchronous = False

    def __init__(
        self,
        owner: ClearanceSettings,
        query: str,
        documents: Sequence[Document],
        run: Any = None,
        reference: str | None = None,
    ) -> None:
        self.owner, self.run, self.query = owner, run, query
        self.documents, self.reference = documents, reference

    def notify(self, event: FlowEvent) -> None:
        from ..runtime.payloads import event_name

        dispatch_custom_event(
            event_name("clearance"), event.payload, config={"callbacks": self.run.get_child()}
        )
        self.run.on_chain_end({"skipped": event.ended})

    def engine_job(self, request: Clear) -> EngineJob:
        return self.owner._engine_job(self.run, self.query, self.documents, self.reference, request)


class _AsyncHost(_SyncHost):
    """The async driver's host (see :class:`_SyncHost`)."""

    asynchronous = True

    async def notify(self, event: FlowEvent) -> None:  # type: ignore[override]
        from ..runtime.payloads import event_name

        await adispatch_custom_event(
            event_name("clearance"), event.payload, config={"callbacks": self.run.get_child()}
        )
        await self.run.on_chain_end({"skipped": event.ended})
