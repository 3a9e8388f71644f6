"""LangChain integration: ``ClearingRetriever``, ``MeClearCompressor``, judges, simulation.

Needs the ``langchain`` extra (``pip install 'meclear-integrations[langchain]'``).
``MeClearMiddleware`` (LangChain v1 agents) is imported on first use and needs the
``langchain-agents`` extra (``langchain>=1``).
"""

from typing import TYPE_CHECKING, Any

from ._imports import require_langchain

if TYPE_CHECKING:  # imported on first use (``__getattr__``): it needs langchain>=1
    from .middleware import MeClearMiddleware

require_langchain()

from ..pipeline.settings import Documents, Limits, Loop  # noqa: E402
from .admission import AdmissionGate, AdmissionRunnable, GateResult, admitter_from_langchain  # noqa: E402
from .compressor import MeClearCompressor  # noqa: E402
from .judges import LangChainReferenceFreeJudge, LangChainReferenceJudge  # noqa: E402
from .model import LangChainTextModel, as_text_model  # noqa: E402
from .reference import reference_config  # noqa: E402
from .retriever import ClearingRetriever  # noqa: E402
from .simulated import SimulatedChatModel  # noqa: E402
from .volume import INTERNAL_TAG  # noqa: E402

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
    """``MeClearMiddleware``, imported on first use (it needs ``langchain>=1``)."""
    if name == "MeClearMiddleware":
        from .middleware import MeClearMiddleware

        return MeClearMiddleware
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
