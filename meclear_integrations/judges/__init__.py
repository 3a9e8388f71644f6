"""Judges: the success signal of the evaluator, framework-neutral.

Rule judges (:class:`ExactMatchJudge`, :class:`TokenF1Judge`), any function
(:class:`CallableJudge`), and LLM judges (:class:`ReferenceLLMJudge`,
:class:`ReferenceFreeLLMJudge`) over the neutral :class:`TextModel` protocol, which the
LangChain and LlamaIndex integrations adapt. :func:`task_evaluator` composes an answer
function and a judge into the engine's ``evaluate(coalition, trial)``.
"""

from .base import BaseJudge, Judge, JudgeVerdict, ParseMethod
from .callable import CallableJudge
from .errors import JudgeError, MissingReferenceError, VerdictParseError
from .llm import LLMJudge, ReferenceFreeLLMJudge, ReferenceLLMJudge
from .match import ExactMatchJudge, TokenF1Judge, token_f1
from .model import (
    FunctionTextModel,
    StructuredTextModel,
    TextModel,
    as_text_model,
    supports_structured_output,
)
from .parsing import VERDICT_SCHEMA, VerdictSchema
from .protocol import parse_verdict, read_nonce, verdict_reply
from .task import (
    AnswerFunction,
    AsyncTaskEvaluator,
    TaskEvaluator,
    TaskRecord,
    task_evaluator,
)

__all__ = [
    "VERDICT_SCHEMA",
    "AnswerFunction",
    "AsyncTaskEvaluator",
    "BaseJudge",
    "CallableJudge",
    "ExactMatchJudge",
    "FunctionTextModel",
    "Judge",
    "JudgeError",
    "JudgeVerdict",
    "LLMJudge",
    "MissingReferenceError",
    "ParseMethod",
    "ReferenceFreeLLMJudge",
    "ReferenceLLMJudge",
    "StructuredTextModel",
    "TaskEvaluator",
    "TaskRecord",
    "TextModel",
    "TokenF1Judge",
    "VerdictParseError",
    "VerdictSchema",
    "as_text_model",
    "parse_verdict",
    "read_nonce",
    "supports_structured_output",
    "task_evaluator",
    "token_f1",
    "verdict_reply",
]
