"""LangChain integration: ``ClearingRetriever``, ``MeClearCompressor``, judges, simulation.

Needs the ``langchain`` extra (``pip install 'meclear-integrations[langchain]'``).
"""

from ._imports import require_langchain

require_langchain()

from .admission import (  # noqa: E402
    ADMISSION_EVENT,
    AdmissionGate,
    AdmissionRunnable,
    GateResult,
    admitter_from_langchain,
)
from .clearance import CLEARANCE_RUN_NAME, EVALUATE_RUN_NAME, default_agent  # noqa: E402
from .compressor import MeClearCompressor  # noqa: E402
from .judges import (  # noqa: E402
    LangChainReferenceFreeJudge,
    LangChainReferenceJudge,
    resolve_judge,
)
from .model import (  # noqa: E402
    LangChainStructuredTextModel,
    LangChainTextModel,
    as_text_model,
    message_text,
)
from .reference import REFERENCE_METADATA_KEY, reference_config  # noqa: E402
from .retriever import ClearingRetriever  # noqa: E402
from .simulated import SimulatedChatModel  # noqa: E402
from .volume import INTERNAL_TAG  # noqa: E402

__all__ = [
    "ADMISSION_EVENT",
    "CLEARANCE_RUN_NAME",
    "EVALUATE_RUN_NAME",
    "INTERNAL_TAG",
    "REFERENCE_METADATA_KEY",
    "AdmissionGate",
    "AdmissionRunnable",
    "ClearingRetriever",
    "GateResult",
    "LangChainReferenceFreeJudge",
    "LangChainReferenceJudge",
    "LangChainStructuredTextModel",
    "LangChainTextModel",
    "MeClearCompressor",
    "SimulatedChatModel",
    "admitter_from_langchain",
    "as_text_model",
    "default_agent",
    "message_text",
    "reference_config",
    "resolve_judge",
]
