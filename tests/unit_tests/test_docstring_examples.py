"""The integration classes' docstring examples run, and print what their comments say.

Each ```python block of a docstring runs in one namespace per object (later blocks use the
names of earlier ones); every ``print(...)  # expected`` line must print ``expected``.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import textwrap

import pytest

DOCUMENTED = [
    "langchain.ClearingRetriever",
    "langchain.MeClearCompressor",
    "langchain.AdmissionRunnable",
    "langchain.AdmissionGate",
    "langchain.LangChainReferenceJudge",
    "langchain.LangChainReferenceFreeJudge",
    "langchain.SimulatedChatModel",
    "langchain.as_text_model",
    "langchain.MeClearMiddleware",
    "langgraph.ClearingStore",
    "llama_index.MeClearPostprocessor",
    "llama_index.MeClearMemoryBlock",
    "llama_index.MeClearPostprocessor.clear_nodes",
    "llama_index.admission.AdmissionTransform",
    "llama_index.LlamaIndexReferenceJudge",
    "llama_index.SimulatedLLM",
    "llama_index.HashEmbedding",
    "llama_index.as_text_model",
]
_PRINTED = re.compile(r"^\s*print\(.*\)\s+#\s*(.+?)\s*$", flags=re.M)


def _resolve(path: str) -> object:
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module("meclear_integrations." + ".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise LookupError(path)


@pytest.mark.parametrize("path", DOCUMENTED)
def test_docstring_examples_run_and_print_what_they_say(path: str) -> None:
    doc = _resolve(path).__doc__ or ""
    blocks = [textwrap.dedent(b) for b in re.findall(r"```python\n(.*?)```", doc, flags=re.S)]
    assert blocks, f"{path} has no python example"
    namespace: dict[str, object] = {}
    printed: list[str] = []
    expected: list[str] = []
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, path, "exec"), namespace)
        printed += out.getvalue().splitlines()
        expected += _PRINTED.findall(block)
    assert expected, f"{path}: no example output to check"
    assert printed == expected


def test_langchain_classes_have_the_integration_sections() -> None:
    from meclear_integrations import langchain

    for cls in (langchain.ClearingRetriever, langchain.MeClearCompressor):
        doc = cls.__doc__ or ""
        for section in (
            "Setup:",
            "Key init args:",
            "Instantiate:",
            "Usage:",
            "Use within a chain:",
            "Async:",
        ):
            assert f"\n    {section}\n" in doc, (cls.__name__, section)
