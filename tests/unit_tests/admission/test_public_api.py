"""The admission package's public surface, and that it loads no framework."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

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


@pytest.mark.slow  # starts a subprocess
def test_engine_bench_and_cli_run_with_frameworks_blocked() -> None:
    code = textwrap.dedent(
        """
        import importlib.abc, sys, tempfile
        BLOCKED = ("langchain", "langchain_core", "langsmith", "llama_index", "matplotlib",
                   "openai", "sklearn")
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ImportError(f"blocked import of {name}")
        sys.meta_path.insert(0, Block())
        from meclear_integrations.admission import ConMemAdmitter
        from meclear_integrations.admission.scripted import ScriptedAdmissionModel
        from meclear_integrations.cli import main
        d = ConMemAdmitter(ScriptedAdmissionModel()).decide("User is vegan.", "user: I'm vegan.")
        assert d.ok, d.error
        assert main(["admission-bench", "--out", tempfile.mkdtemp()]) == 0
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
