"""LlamaIndex integration: ``MeClearPostprocessor``, ``MeClearMemoryBlock``, events, judges.

Needs the ``llama-index`` extra (``pip install 'meclear-integrations[llama-index]'``).
Every name is imported from its module on first use. The ConMem admission transform lives
in ``meclear_integrations.llama_index.admission``.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._imports import require_llama_index

require_llama_index()

if TYPE_CHECKING:
    from ..pipeline.settings import Documents, Limits, Loop
    from .events import (
        MeClearProgressEvent,
        MeClearStageEndEvent,
        MeClearStageEvent,
        MeClearStageStartEvent,
    )
    from .judges import LlamaIndexReferenceFreeJudge, LlamaIndexReferenceJudge
    from .memory import MeClearMemoryBlock
    from .model import LlamaIndexTextModel, as_text_model
    from .postprocessor import MeClearPostprocessor
    from .reference import current_reference, query_reference
    from .simulated import HashEmbedding, SimulatedLLM

_LAZY = {
    "Documents": "..pipeline.settings",
    "HashEmbedding": ".simulated",
    "Limits": "..pipeline.settings",
    "LlamaIndexReferenceFreeJudge": ".judges",
    "LlamaIndexReferenceJudge": ".judges",
    "LlamaIndexTextModel": ".model",
    "Loop": "..pipeline.settings",
    "MeClearMemoryBlock": ".memory",
    "MeClearPostprocessor": ".postprocessor",
    "MeClearProgressEvent": ".events",
    "MeClearStageEndEvent": ".events",
    "MeClearStageEvent": ".events",
    "MeClearStageStartEvent": ".events",
    "SimulatedLLM": ".simulated",
    "as_text_model": ".model",
    "current_reference": ".reference",
    "query_reference": ".reference",
}
"""Each exported name's module."""

__all__ = [
    "Documents",
    "HashEmbedding",
    "Limits",
    "LlamaIndexReferenceFreeJudge",
    "LlamaIndexReferenceJudge",
    "LlamaIndexTextModel",
    "Loop",
    "MeClearMemoryBlock",
    "MeClearPostprocessor",
    "MeClearProgressEvent",
    "MeClearStageEndEvent",
    "MeClearStageEvent",
    "MeClearStageStartEvent",
    "SimulatedLLM",
    "as_text_model",
    "current_reference",
    "query_reference",
]


def __getattr__(name: str) -> Any:
    """An exported name, imported from its module on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
