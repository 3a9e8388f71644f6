"""The judges package's public surface."""

from __future__ import annotations

import meclear_integrations.judges as judges

EXPECTED = [
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


def test_all_is_exactly_the_expected_surface() -> None:
    assert sorted(judges.__all__) == sorted(EXPECTED)
    assert len(set(judges.__all__)) == len(judges.__all__)
    for name in judges.__all__:
        assert hasattr(judges, name), name
