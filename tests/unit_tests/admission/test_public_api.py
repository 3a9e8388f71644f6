"""The admission package's public surface, and that it loads no framework."""

from __future__ import annotations

import meclear_bench.admission_baselines as base
import meclear_integrations.admission as adm
from meclear_integrations.admission.model import TextModel
from meclear_integrations.judges.model import TextModel as JudgesTextModel

EXPECTED = {
    "AdmissionConfig",
    "AdmissionDecision",
    "AdmissionError",
    "AdmissionEvent",
    "AdmissionFailedError",
    "AdmissionHook",
    "AdmissionRecord",
    "AdmissionTicket",
    "BackgroundAdmission",
    "ConMemAdmitter",
    "Decision",
    "DedupTextModel",
    "FunctionTextModel",
    "OnError",
    "TextModel",
    "cheap_config",
}

BASELINES = [
    "DEFAULT_TYPE_PRIORS",
    "TASK_FEATURES",
    "AMACBaseline",
    "AMEMBaseline",
    "BaselineDecision",
    "FeatureBaseline",
    "MemoryBankBaseline",
    "lexical_novelty",
    "recency",
    "rouge_l_grounding",
]


def test_all_is_exact_and_exported() -> None:
    assert set(adm.__all__) == EXPECTED
    for module in (adm, base):
        for name in module.__all__:
            assert hasattr(module, name), name
    assert sorted(base.__all__) == sorted(BASELINES)


def test_one_text_model_protocol_for_the_project() -> None:
    assert TextModel is JudgesTextModel
