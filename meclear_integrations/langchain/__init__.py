"""LangChain integration: ``ClearingRetriever``, ``MeClearCompressor``, judges, simulation.

Needs the ``langchain`` extra (``pip install 'meclear-integrations[langchain]'``).
Every name is imported from its module on first use (``import
meclear_integrations.langchain`` alone loads no engine); ``MeClearMiddleware`` (LangChain
v1 agents) needs the ``langchain-agents`` extra (``langchain>=1``).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._imports import require_langchain

require_langchain()

if TYPE_CHECKING:
    from ..pipeline.settings import Documents, Limits, Loop
    from .admission import AdmissionGate, AdmissionRunnable, GateResult, admitter_from_langchain
    from .compressor import MeClearCompressor
    from .judges import LangChainReferenceFreeJudge, LangChainReferenceJudge
    from .middleware import MeClearMiddleware
    from .model import LangChainTextModel, as_text_model
    from .reference import reference_config
    from .retriever import ClearingRetriever
    from .simulated import SimulatedChatModel
    from .volume import INTERNAL_TAG

_LAZY = {
    "INTERNAL_TAG": ".volume",
    "AdmissionGate": ".admission",
    "AdmissionRunnable": ".admission",
    "ClearingRetriever": ".retriever",
    "Documents": "..pipeline.settings",
    "GateResult": ".admission",
    "LangChainReferenceFreeJudge": ".judges",
    "LangChainReferenceJudge": ".judges",
    "LangChainTextModel": ".model",
    "Limits": "..pipeline.settings",
    "Loop": "..pipeline.settings",
    "MeClearCompressor": ".compressor",
    "MeClearMiddleware": ".middleware",
    "SimulatedChatModel": ".simulated",
    "admitter_from_langchain": ".admission",
    "as_text_model": ".model",
    "reference_config": ".reference",
}
"""Each exported name's module."""

__all__ = [
    "INTERNAL_TAG",
    "AdmissionGate",
    "AdmissionRunnable",
    "ClearingRetriever",
    "Documents",
    "GateResult",
    "LangChainReferenceFreeJudge",
    "LangChainReferenceJudge",
    "LangChainTextModel",
    "Limits",
    "Loop",
    "MeClearCompressor",
    "MeClearMiddleware",
    "SimulatedChatModel",
    "admitter_from_langchain",
    "as_text_model",
    "reference_config",
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
