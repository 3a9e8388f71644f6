"""LlamaIndex integration: ``MeClearPostprocessor``, ``MeClearMemoryBlock``, events, judges.

Needs the ``llama-index`` extra (``pip install 'meclear-integrations[llama-index]'``).
The ConMem admission transform lives in ``meclear_integrations.llama_index.admission``.
"""

from ._imports import require_llama_index

require_llama_index()

from ..pipeline.settings import Documents, Limits, Loop  # noqa: E402
from .events import (  # noqa: E402
    MeClearProgressEvent,
    MeClearStageEndEvent,
    MeClearStageEvent,
    MeClearStageStartEvent,
)
from .judges import LlamaIndexReferenceFreeJudge, LlamaIndexReferenceJudge  # noqa: E402
from .memory import MeClearMemoryBlock  # noqa: E402
from .model import LlamaIndexTextModel, as_text_model  # noqa: E402
from .postprocessor import MeClearPostprocessor  # noqa: E402
from .reference import current_reference, query_reference  # noqa: E402
from .simulated import HashEmbedding, SimulatedLLM  # noqa: E402

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
