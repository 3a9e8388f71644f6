"""The LangChain subpackage's public surface and its missing-extra message."""

from __future__ import annotations

import meclear_integrations.langchain as lc
from meclear_integrations.langchain.model import LangChainStructuredTextModel, message_text

EXPECTED = [
    "AdmissionGate",
    "AdmissionRunnable",
    "ClearingRetriever",
    "Documents",
    "Limits",
    "Loop",
    "GateResult",
    "INTERNAL_TAG",
    "LangChainReferenceFreeJudge",
    "LangChainReferenceJudge",
    "LangChainTextModel",
    "MeClearCompressor",
    "MeClearMiddleware",
    "SimulatedChatModel",
    "admitter_from_langchain",
    "as_text_model",
    "reference_config",
]


def test_the_setting_groups_are_the_pipeline_s() -> None:
    from meclear_integrations import pipeline

    for name in ("Documents", "Limits", "Loop"):
        assert getattr(lc, name) is getattr(pipeline, name)


def test_all_is_exactly_the_expected_surface() -> None:
    assert sorted(lc.__all__) == sorted(EXPECTED)
    assert len(set(lc.__all__)) == len(lc.__all__)
    for name in lc.__all__:
        assert hasattr(lc, name), name


def test_text_model_structured_detection(llm) -> None:
    from langchain_core.runnables import RunnableLambda

    assert not isinstance(lc.as_text_model(llm), LangChainStructuredTextModel)
    assert lc.as_text_model(RunnableLambda(lambda p: "yes")).complete("q") == "yes"
    assert message_text({"answer": "x"}) == "x"
