"""The LlamaIndex subpackage's public surface, and the error when the extra is missing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import meclear_integrations.llama_index as li

EXPECTED = {
    "AttributionEndEvent",
    "AttributionStartEvent",
    "ClearanceEndEvent",
    "ClearanceStartEvent",
    "HashEmbedding",
    "InteractionsEndEvent",
    "InteractionsStartEvent",
    "LlamaIndexReferenceFreeJudge",
    "LlamaIndexReferenceJudge",
    "LlamaIndexStructuredTextModel",
    "LlamaIndexTextModel",
    "MeClearPostprocessor",
    "MeClearStageEndEvent",
    "MeClearStageEvent",
    "MeClearStageStartEvent",
    "NodeClearance",
    "ScreeningEndEvent",
    "ScreeningStartEvent",
    "SimulatedLLM",
    "as_text_model",
    "current_reference",
    "query_reference",
    "resolve_judge",
    "supports_function_calling",
}


def test_all_is_the_expected_surface() -> None:
    assert set(li.__all__) >= EXPECTED
    for name in li.__all__:
        assert hasattr(li, name), name


def test_postprocessor_is_a_llama_index_component() -> None:
    from llama_index.core.postprocessor.types import BaseNodePostprocessor

    assert issubclass(li.MeClearPostprocessor, BaseNodePostprocessor)
    assert li.MeClearPostprocessor.class_name() == "MeClearPostprocessor"
    assert li.SimulatedLLM.class_name() == "MeClearSimulatedLLM"
    stages = ("Screening", "Attribution", "Interactions", "Clearance")
    events = [getattr(li, f"{s}{p}Event") for s in stages for p in ("Start", "End")]
    names = {e.class_name() for e in events}
    assert len(names) == 8 and all(n.startswith("MeClear") for n in names)


def test_missing_extra_names_it() -> None:
    code = textwrap.dedent(
        """
        import importlib.abc, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("llama_index", "llama_index_instrumentation"):
                    raise ImportError(f"blocked import of {name}")
        sys.meta_path.insert(0, Block())
        try:
            import meclear_integrations.llama_index
        except ImportError as exc:
            print(exc)
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "pip install 'meclear-integrations[llama-index]'" in result.stdout, result.stderr
