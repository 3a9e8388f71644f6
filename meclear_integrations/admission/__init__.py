"""ConMem: counterfactual admission of candidate memories (framework-free).

Given a candidate memory and its historical context, :class:`ConMemAdmitter` generates a
validated probe triplet (relevant, irrelevant, risk), answers each probe with and without
the memory, has a blind judge compare the answers and an auditor attribute the change,
aggregates the signed contributions into CMTE and decides store / do-not-store
(score first, tie-break judge at zero), then classifies the reason post hoc.
"""

from typing import TYPE_CHECKING

from ..core.lazy import lazy_exports

if TYPE_CHECKING:
    from .background import AdmissionRecord, AdmissionTicket, BackgroundAdmission
    from .config import AdmissionConfig, cheap_config
    from .decision import AdmissionDecision, AdmissionFailedError
    from .dedup import DedupTextModel
    from .engine import ConMemAdmitter
    from .errors import AdmissionError
    from .events import AdmissionEvent
    from .hook import AdmissionHook, OnError
    from .labels import Decision
    from .model import FunctionTextModel, TextModel

__all__ = [
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
]

_LAZY = {
    **dict.fromkeys(
        [
            "AdmissionRecord",
            "AdmissionTicket",
            "BackgroundAdmission",
        ],
        ".background",
    ),
    **dict.fromkeys(
        [
            "AdmissionConfig",
            "cheap_config",
        ],
        ".config",
    ),
    **dict.fromkeys(
        [
            "AdmissionDecision",
            "AdmissionFailedError",
        ],
        ".decision",
    ),
    "DedupTextModel": ".dedup",
    "ConMemAdmitter": ".engine",
    "AdmissionError": ".errors",
    "AdmissionEvent": ".events",
    **dict.fromkeys(
        [
            "AdmissionHook",
            "OnError",
        ],
        ".hook",
    ),
    "Decision": ".labels",
    **dict.fromkeys(
        [
            "FunctionTextModel",
            "TextModel",
        ],
        ".model",
    ),
}
"""Each lazily exported name's module."""

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
