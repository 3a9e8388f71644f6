"""OpenTelemetry spans of a clearance (the ``otel`` extra: ``opentelemetry-api``).

MeClear never imports OpenTelemetry itself: when the application has loaded it and
configured a tracer provider that records (or passes ``TraceSettings(tracer_provider=...)``,
or handed one only to OpenInference's LangChain / LlamaIndex instrumentor: under that
instrumentation's span the clearance span goes to its provider,
``parents.instrumentation_provider``),
every clearance, from the bare engine or either integration, sync or async, emits the span
tree below, parented to the caller's current span (or, under an OpenInference LangChain /
LlamaIndex instrumentation, to that instrumentation's span of the retrieval step).
Without the extra, or without a recording provider, nothing is imported and no span is
built. Settings: :class:`TraceSettings` (``MeClearEngine(tracing=...)``,
``ClearingRetriever(tracing=...)``, ``MeClearPostprocessor(tracing=...)``).

Span tree (``detail`` chooses how much of it)::

    meclear.clearance                      RERANKER, gen_ai.operation.name="clearance"
    ├── meclear.stage.screening            CHAIN (baseline, leave-one-out effects)
    │   └── meclear.evaluate               CHAIN, one evaluator call (agent + judge)
    │       ├── <agent model spans of your instrumentation>
    │       └── meclear.judge              EVALUATOR, gen_ai.evaluation.score.value
    ├── meclear.stage.attribution          (Shapley values, harmful ids)
    ├── meclear.stage.interactions         (when enabled)
    └── meclear.stage.clearance            (candidates, verified selection)

- ``detail="evaluations"``: every evaluator call (each attempt) and every judge call.
- ``detail="failures"`` (default): the clearance and stage spans; an evaluation span (and
  its judge span) only for calls that raised, back-dated to the call's start.
- ``detail="stages"``: the clearance and stage spans only.
In the last two, each evaluator call runs with OpenTelemetry's suppress-instrumentation key
set (:func:`~meclear_integrations.core.tracing.hooks.quiet_internal_runs`): OpenInference's
LangChain and LlamaIndex instrumentations (and OpenTelemetry's own) make no span of the
agent's and judge's calls, so a clearance is 4 spans under them too; an instrumentation
that ignores the key nests its model spans under the stage span. Under OpenInference's
LangChain instrumentation the clearance run makes no span of its own (the clearance span
stands for it), and at ``"evaluations"`` its evaluation spans nest under
``meclear.evaluate``.

Attributes (GenAI semantic conventions and OpenInference where they define one):

- clearance span: ``gen_ai.operation.name`` (``clearance``), ``gen_ai.data_source.id``
  (``TraceSettings.data_source_id``), ``openinference.span.kind`` (``RERANKER``),
  ``reranker.input_documents.<i>.document.id`` / ``reranker.output_documents.<i>.document.id``
  (memories in / kept), one ``meclear.memory.cleared`` event per cleared memory with
  ``gen_ai.memory.record.id``; ``meclear.memories.count``, ``meclear.memory_ids``,
  ``meclear.kept_ids`` / ``meclear.kept.count``, ``meclear.cleared_ids`` /
  ``meclear.cleared.count``, ``meclear.recovered``, ``meclear.status`` (complete, failed,
  unverified, skipped; ``raised`` when the run raised), ``meclear.status_reason``,
  ``meclear.early_exit``, ``meclear.baseline_value``, ``meclear.final_value``,
  ``meclear.estimator``, ``meclear.clearance_search``, ``meclear.cost.<field>`` (every
  numeric field of ``ClearanceCost``: coalitions, evaluator_calls, cache_hits,
  wall_seconds, rounds, attempts, retries and, from an integration, the same model calls
  as the documents' ``model_calls`` metadata: ``meclear.cost.agent_calls``,
  ``meclear.cost.judge_calls``, ``meclear.cost.model_calls``), the tokens when the
  provider reports usage (``meclear.cost.agent_tokens.input_tokens`` /
  ``.output_tokens`` / ``.calls_reported``, the same for ``judge_tokens``, and their sums
  as ``gen_ai.usage.input_tokens`` / ``gen_ai.usage.output_tokens``),
  ``meclear.config.*``, ``meclear.trace.detail``,
  ``meclear.framework``; a failed (fail-open) run: ERROR status, ``error.type`` = the
  failure reason, ``meclear.failure.reason`` / ``.kind`` / ``.stage`` / ``.failed_count``;
  instruction-like memories, ``meclear.suspect_ids`` / ``meclear.suspects_kept``.
- stage spans ``meclear.stage.<stage>``: ``meclear.stage`` and the stage event's payload
  as ``meclear.<stage>.<key>`` (scalars and id lists as they are, maps as JSON strings:
  ``meclear.screening.loo``, ``meclear.attribution.shapley``...); a stage that failed:
  ERROR status, ``error.type``, an ``exception`` event (redacted message); progress (the
  engine's ``progress`` events, never spans of their own) as ``meclear.progress`` span
  events with ``meclear.progress.batch`` / ``.calls_done`` / ``.calls_total`` /
  ``.run_calls_done`` / ``.elapsed_seconds``: one per finished batch, every progress event
  with ``detail="evaluations"``, none with ``detail="stages"``.
- ``meclear.evaluate``: ``meclear.stage``, ``meclear.coalition.memory_ids``,
  ``meclear.coalition.size``, ``meclear.trial``, ``meclear.attempt``, ``meclear.score``
  and a ``gen_ai.evaluation.result`` event (``gen_ai.evaluation.name`` =
  ``meclear.utility``, ``gen_ai.evaluation.score.value``, ``gen_ai.evaluation.score.label``
  ``pass`` / ``fail`` against ``success_threshold``).
- ``meclear.judge`` (EVALUATOR): ``gen_ai.evaluation.name`` (``correctness``),
  ``gen_ai.evaluation.score.value``, ``gen_ai.evaluation.score.label`` (``correct`` /
  ``incorrect``), ``meclear.judge.type``, ``meclear.judge.parsed_by``,
  ``meclear.judge.reference_given``, and the same ``gen_ai.evaluation.result`` event.

Contents (query, memory texts, answers, judge reasons) are recorded only when
``TraceSettings.capture_content`` is True, or left None with the environment variable
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``: ``reranker.query`` /
``input.value`` (the query), ``reranker.*_documents.<i>.document.content``, the judge
span's ``input.value`` (the answer) and ``meclear.question``,
``gen_ai.evaluation.explanation``. Every string attribute and event (contents, ids,
error messages) is passed through ``core.redaction.redact``; exceptions are recorded as an
``exception`` event with type and redacted message only (never a stack trace).
"""

from ..core.tracing.scope import ClearanceScope, clearance_scope
from ..core.tracing.settings import CAPTURE_CONTENT_ENV, TraceDetail, TraceSettings

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "ClearanceScope",
    "TraceDetail",
    "TraceSettings",
    "clearance_scope",
]
