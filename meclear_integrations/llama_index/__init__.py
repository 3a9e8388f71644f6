"""LlamaIndex integration: ``MeClearPostprocessor``, instrumentation events, judges, simulation.

Needs the ``llama-index`` extra (``pip install 'meclear-integrations[llama-index]'``).
The ConMem admission transform lives in ``meclear_integrations.llama_index.admission``.
"""

from ._imports import require_llama_index

require_llama_index()

from .events import (  # noqa: E402
    AttributionEndEvent,
    AttributionStartEvent,
    ClearanceEndEvent,
    ClearanceStartEvent,
    InteractionsEndEvent,
    InteractionsStartEvent,
    MeClearProgressEvent,
    MeClearStageEndEvent,
    MeClearStageEvent,
    MeClearStageStartEvent,
    ScreeningEndEvent,
    ScreeningStartEvent,
)
from .judges import (  # noqa: E402
    LlamaIndexReferenceFreeJudge,
    LlamaIndexReferenceJudge,
    resolve_judge,
)
from .model import (  # noqa: E402
    LlamaIndexStructuredTextModel,
    LlamaIndexTextModel,
    as_text_model,
    supports_function_calling,
)
from .postprocessor import MeClearPostprocessor, NodeClearance  # noqa: E402
from .reference import current_reference, query_reference  # noqa: E402
from .simulated import HashEmbedding, SimulatedLLM  # noqa: E402

__all__ = [
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
    "MeClearProgressEvent",
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
]
