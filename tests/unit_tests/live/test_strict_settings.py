"""Unknown settings raise, naming the closest valid one or where it belongs; the old name
of the fail-open switch is rejected with a hint."""

from __future__ import annotations

import pytest
from langchain_core.runnables import RunnableLambda

from meclear_integrations import ClearanceConfig
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.core import EarlyStops
from meclear_integrations.core.strict import UnknownSettingError

LLM = RunnableLambda(lambda prompt: "x")
RETRIEVER = RunnableLambda(lambda query: [])


def _langchain(kind: str, **kwargs: object) -> object:
    from meclear_integrations.langchain import ClearingRetriever, MeClearCompressor

    if kind == "retriever":
        return ClearingRetriever(retriever=RETRIEVER, llm=LLM, **kwargs)
    return MeClearCompressor(llm=LLM, **kwargs)


def _llama_index(**kwargs: object) -> object:
    from meclear_integrations.llama_index import MeClearPostprocessor

    return MeClearPostprocessor(**kwargs)


BUILDERS = {
    "ClearingRetriever": lambda **kw: _langchain("retriever", **kw),
    "MeClearCompressor": lambda **kw: _langchain("compressor", **kw),
    "MeClearPostprocessor": _llama_index,
}


@pytest.mark.parametrize("component", list(BUILDERS))
@pytest.mark.parametrize(
    ("kwargs", "hint"),
    [
        ({"trials": 1}, r"clearance=ClearanceConfig\(trials=\.\.\.\)"),
        (
            {"max_concurrency": 2},
            r"clearance=ClearanceConfig\(budget=Budget\(max_concurrency=\.\.\.\)\)",
        ),
        ({"on_eror": "raise"}, r"renamed on_failure"),
        ({"on_error": "raise"}, r"on_failure='closed' \(was 'raise'\)"),
        ({"config": ClearanceConfig()}, r"clearance=ClearanceConfig"),
        ({"judge_contxt": "full"}, r"judge_context moved into documents"),
        ({"metadata_kye": "x"}, r"metadata_key moved into documents"),
    ],
)
def test_unknown_settings_raise_with_a_hint(component: str, kwargs: dict, hint: str) -> None:
    with pytest.raises(ValueError, match=hint) as info:
        BUILDERS[component](**kwargs)
    assert component in str(info.value)


def test_engine_config_and_retry_policy_are_strict_too() -> None:
    with pytest.raises(ValueError, match=r"`max_evaluator_calls` moved: use `budget=Budget\("):
        ClearanceConfig(max_evaluator_call=5)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"failure=FailurePolicy\(mode="):
        ClearanceConfig(on_error="raise")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"`on_failure` moved: use `failure=FailurePolicy\(mode="):
        ClearanceConfig(on_failure="closed")  # type: ignore[call-arg]
    with pytest.raises(
        ValueError, match=r"`max_exact_memories` moved: use `estimator=ExactShapley"
    ):
        ClearanceConfig(max_exact_memories=8)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"`hierarchical_from` moved: use `estimator=AutoShapley"):
        ClearanceConfig(hierarchical_from=8)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"`verification_delta` moved: use `verification=Verif"):
        ClearanceConfig(verification_delta=0.2)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"`stop_unexplained` moved: use `stops=EarlyStops\("):
        ClearanceConfig(stop_unexplained=True)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"`stop_cannot_answer` moved: use `stops=EarlyStops\("):
        ClearanceConfig(stop_cannot_answer=False)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"is now `unexplained`: EarlyStops\(unexplained="):
        ClearanceConfig(stops={"stop_unexplained": True})
    assert ClearanceConfig(stops={"unexplained": True}).updated(
        stops={"cannot_answer": False}
    ).stops == EarlyStops(unexplained=True, cannot_answer=False)
    with pytest.raises(ValueError, match=r"retry[\s\S]*did you mean 'max_attempts'"):
        ClearanceConfig(failure={"retry": {"max_attempt": 2}})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="did you mean 'trials'"):
        _langchain("retriever", clearance={"trails": 1})


def test_one_switch_name_on_engine_and_components() -> None:
    from meclear_integrations.langchain import ClearingRetriever
    from meclear_integrations.llama_index import MeClearPostprocessor

    assert ClearanceConfig(failure={"mode": "closed"}).failure.mode == "closed"
    assert len(ClearanceConfig.model_fields) <= 20
    assert "on_failure" in ClearingRetriever.model_fields
    assert "on_failure" in MeClearPostprocessor.model_fields
    for cls in (ClearingRetriever, MeClearPostprocessor):
        assert "on_error" not in cls.model_fields


def test_admission_components_are_strict() -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from meclear_integrations.admission import ConMemAdmitter
    from meclear_integrations.langchain.admission import AdmissionGate, AdmissionRunnable
    from meclear_integrations.llama_index.admission import AdmissionTransform

    admitter = ConMemAdmitter(ScriptedAdmissionModel())
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=4))
    with pytest.raises(UnknownSettingError, match="did you mean 'metadata_key'"):
        AdmissionGate(store, admitter, metadata_kye="x")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="did you mean 'context_key'"):
        AdmissionRunnable(admitter=admitter, context_kye="x")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="did you mean 'keep_rejected'"):
        AdmissionTransform(admitter=admitter, keep_rejectd=True)  # type: ignore[call-arg]
    AdmissionGate(store, admitter, metadata_key="ok")  # valid settings still work
