"""ConMem: counterfactual admission of candidate memories (framework-free).

Given a candidate memory and its historical context, :class:`ConMemAdmitter` generates a
validated probe triplet (relevant, irrelevant, risk), answers each probe with and without
the memory, has a blind judge compare the answers and an auditor attribute the change,
aggregates the signed contributions into CMTE and decides store / do-not-store
(score first, tie-break judge at zero), then classifies the reason post hoc.
"""

from .background import (
    AdmissionRecord,
    AdmissionTicket,
    BackgroundAdmission,
    BackgroundAdmissionEvent,
)
from .config import AdmissionConfig, CMTEWeights, RoleWeights, cheap_config
from .decision import (
    AdmissionCost,
    AdmissionDecision,
    AttributionAudit,
    CallFailure,
    JudgeVerdict,
    ProbeCheck,
    ProbeEvaluation,
    ProbeRound,
    ReasonClassification,
    StageError,
    TieBreak,
)
from .dedup import DedupTextModel
from .engine import AdmissionRequest, ConMemAdmitter
from .errors import AdmissionError, AdmissionFailedError
from .events import AdmissionEvent, AdmissionListener
from .hook import AdmissionHook, OnError, admits
from .labels import PROBE_ROLES, REJECTION_REASONS, Decision, ProbeRole, ReasonType
from .model import (
    FunctionTextModel,
    StructuredTextModel,
    TextModel,
    as_text_model,
    supports_structured_output,
)
from .scoring import cmte, contribution, effect, treatment_position, unit_score, unmap_preference

__all__ = [
    "PROBE_ROLES",
    "REJECTION_REASONS",
    "AdmissionConfig",
    "AdmissionCost",
    "AdmissionDecision",
    "AdmissionError",
    "AdmissionEvent",
    "AdmissionFailedError",
    "AdmissionHook",
    "AdmissionListener",
    "AdmissionRecord",
    "AdmissionRequest",
    "AdmissionTicket",
    "AttributionAudit",
    "BackgroundAdmission",
    "BackgroundAdmissionEvent",
    "CMTEWeights",
    "CallFailure",
    "ConMemAdmitter",
    "Decision",
    "DedupTextModel",
    "FunctionTextModel",
    "JudgeVerdict",
    "OnError",
    "ProbeCheck",
    "ProbeEvaluation",
    "ProbeRole",
    "ProbeRound",
    "ReasonClassification",
    "ReasonType",
    "RoleWeights",
    "StageError",
    "StructuredTextModel",
    "TextModel",
    "TieBreak",
    "admits",
    "as_text_model",
    "cheap_config",
    "cmte",
    "contribution",
    "effect",
    "supports_structured_output",
    "treatment_position",
    "unit_score",
    "unmap_preference",
]
