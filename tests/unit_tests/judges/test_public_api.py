"""The judges package's public surface."""

from __future__ import annotations

import meclear_integrations.judges as judges

EXPECTED = [
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


def test_all_is_exactly_the_expected_surface() -> None:
    assert sorted(judges.__all__) == sorted(EXPECTED)
    assert len(set(judges.__all__)) == len(judges.__all__)
    for name in judges.__all__:
        assert hasattr(judges, name), name
