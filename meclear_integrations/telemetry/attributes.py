"""Span and attribute names: GenAI semantic conventions, OpenInference, then ``meclear.*``.

The GenAI semantic conventions and OpenInference name what they define; the ``meclear.*``
namespace names the rest (documented in the package docstring).

Both conventions are in development; the names below follow the GenAI conventions'
registry (``gen_ai.*``: operation name, data source, evaluation result, memory record
id) and the OpenInference specification (``openinference.span.kind``, ``reranker.*``,
``document.*``, ``input.value`` / ``output.value``).
"""

from __future__ import annotations

__all__ = [
    "CLEARANCE_OPERATION",
    "CLEARANCE_SPAN",
    "COST_AGENT_CALLS",
    "COST_AGENT_TOKENS",
    "COST_JUDGE_CALLS",
    "COST_JUDGE_TOKENS",
    "COST_MODEL_CALLS",
    "COST_PREFIX",
    "DOCUMENT_CONTENT",
    "DOCUMENT_ID",
    "ERROR_TYPE",
    "EVALUATE_SPAN",
    "EVALUATION_EXPLANATION",
    "EVALUATION_NAME",
    "EVALUATION_RESULT_EVENT",
    "EVALUATION_SCORE_LABEL",
    "EVALUATION_SCORE_VALUE",
    "GEN_AI_DATA_SOURCE_ID",
    "GEN_AI_OPERATION_NAME",
    "GEN_AI_USAGE_INPUT_TOKENS",
    "GEN_AI_USAGE_OUTPUT_TOKENS",
    "INPUT_VALUE",
    "JUDGE_EVALUATION_NAME",
    "JUDGE_SPAN",
    "MEMORY_CLEARED_EVENT",
    "MEMORY_RECORD_ID",
    "OPENINFERENCE_SPAN_KIND",
    "OUTPUT_VALUE",
    "PROGRESS_EVENT",
    "RERANKER_INPUT_DOCUMENTS",
    "RERANKER_OUTPUT_DOCUMENTS",
    "RERANKER_QUERY",
    "STAGE_SPAN_PREFIX",
    "TRACER_NAME",
    "UTILITY_EVALUATION_NAME",
]

TRACER_NAME = "meclear_integrations"
"""Instrumentation scope of every MeClear span."""

# span names
CLEARANCE_SPAN = "meclear.clearance"
STAGE_SPAN_PREFIX = "meclear.stage."
EVALUATE_SPAN = "meclear.evaluate"
JUDGE_SPAN = "meclear.judge"

# OpenTelemetry GenAI semantic conventions
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_DATA_SOURCE_ID = "gen_ai.data_source.id"
EVALUATION_NAME = "gen_ai.evaluation.name"
EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
EVALUATION_RESULT_EVENT = "gen_ai.evaluation.result"
MEMORY_RECORD_ID = "gen_ai.memory.record.id"
ERROR_TYPE = "error.type"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
"""Prompt tokens of every model call of the clearance (agent + judge), as reported."""
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
"""Completion tokens of every model call of the clearance (agent + judge), as reported."""

CLEARANCE_OPERATION = "clearance"
"""``gen_ai.operation.name`` of the clearance span (a custom value: the conventions have
no operation for filtering a retrieved context)."""
UTILITY_EVALUATION_NAME = "meclear.utility"
"""``gen_ai.evaluation.name`` of an evaluator call's score (one trial of v(S), Eq. 2)."""
JUDGE_EVALUATION_NAME = "correctness"
"""``gen_ai.evaluation.name`` of a judge call (is the agent's answer correct)."""

# OpenInference
OPENINFERENCE_SPAN_KIND = "openinference.span.kind"
RERANKER_QUERY = "reranker.query"
RERANKER_INPUT_DOCUMENTS = "reranker.input_documents"
RERANKER_OUTPUT_DOCUMENTS = "reranker.output_documents"
DOCUMENT_ID = "document.id"
DOCUMENT_CONTENT = "document.content"
INPUT_VALUE = "input.value"
OUTPUT_VALUE = "output.value"

MEMORY_CLEARED_EVENT = "meclear.memory.cleared"
"""Span event on the clearance span, one per cleared memory (``gen_ai.memory.record.id``)."""
PROGRESS_EVENT = "meclear.progress"
"""Span event on a stage span: a batch of evaluator calls (``meclear.progress.batch``,
``.calls_done``, ``.calls_total``, ``.run_calls_done``, ``.elapsed_seconds``)."""

# cost of the clearance span: every numeric ``ClearanceCost`` field as
# ``meclear.cost.<field>`` (coalitions, evaluator_calls, cache_hits, wall_seconds, rounds,
# attempts, retries) and the model calls the integrations count
COST_PREFIX = "meclear.cost."
COST_AGENT_CALLS = "meclear.cost.agent_calls"
"""Model calls of the task agent (the document metadata's ``model_calls.agent``)."""
COST_JUDGE_CALLS = "meclear.cost.judge_calls"
"""Model calls of the judge (the document metadata's ``model_calls.judge``)."""
COST_MODEL_CALLS = "meclear.cost.model_calls"
"""Agent plus judge model calls (the document metadata's ``model_calls.total``)."""
COST_AGENT_TOKENS = "meclear.cost.agent_tokens"
"""Prefix of the agent's tokens: ``.input_tokens``, ``.output_tokens``, ``.calls_reported``
(the document metadata's ``model_calls.tokens.agent``), when the provider reports usage."""
COST_JUDGE_TOKENS = "meclear.cost.judge_tokens"
"""Prefix of the judge's tokens, as :data:`COST_AGENT_TOKENS`."""
