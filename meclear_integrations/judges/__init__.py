"""Judges: the success signal of the evaluator, framework-neutral.

Rule judges (:class:`ExactMatchJudge`, :class:`TokenF1Judge`), any function
(:class:`CallableJudge`), and LLM judges (:class:`ReferenceLLMJudge`,
:class:`ReferenceFreeLLMJudge`) over the neutral :class:`TextModel` protocol, which the
LangChain and LlamaIndex integrations adapt. :func:`task_evaluator` composes an answer
function and a judge into the engine's ``evaluate(coalition, trial)``.
"""

from typing import TYPE_CHECKING

from ..core.lazy import lazy_exports

if TYPE_CHECKING:
    from .base import BaseJudge, Judge, JudgeVerdict
    from .callable import CallableJudge
    from .errors import JudgeError, MissingReferenceError, VerdictParseError
    from .llm import LLMJudge, ReferenceFreeLLMJudge, ReferenceLLMJudge
    from .match import ExactMatchJudge, TokenF1Judge
    from .model import FunctionTextModel, StructuredTextModel, TextModel
    from .task import AsyncTaskEvaluator, TaskEvaluator, task_evaluator

__all__ = [
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
    "ReferenceFreeLLMJudge",
    "ReferenceLLMJudge",
    "StructuredTextModel",
    "TaskEvaluator",
    "TextModel",
    "TokenF1Judge",
    "VerdictParseError",
    "task_evaluator",
]

_LAZY = {
    **dict.fromkeys(
        [
            "BaseJudge",
            "Judge",
            "JudgeVerdict",
        ],
        ".base",
    ),
    "CallableJudge": ".callable",
    **dict.fromkeys(
        [
            "JudgeError",
            "MissingReferenceError",
            "VerdictParseError",
        ],
        ".errors",
    ),
    **dict.fromkeys(
        [
            "LLMJudge",
            "ReferenceFreeLLMJudge",
            "ReferenceLLMJudge",
        ],
        ".llm",
    ),
    **dict.fromkeys(
        [
            "ExactMatchJudge",
            "TokenF1Judge",
        ],
        ".match",
    ),
    **dict.fromkeys(
        [
            "FunctionTextModel",
            "StructuredTextModel",
            "TextModel",
        ],
        ".model",
    ),
    **dict.fromkeys(
        [
            "AsyncTaskEvaluator",
            "TaskEvaluator",
            "task_evaluator",
        ],
        ".task",
    ),
}
"""Each lazily exported name's module."""

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
