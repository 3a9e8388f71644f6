"""Admission baselines of the ConMem paper (Sec. 5.1-5.2): A-MAC, A-MEM, MemoryBank.

Each extracts its model-assessed features with one strict call through the same
:class:`~meclear_integrations.admission.model.TextModel` and scores them by its published
formula and threshold.
"""

from meclear_integrations.admission.feature_prompts import TASK_FEATURES
from meclear_integrations.admission.features import lexical_novelty, recency, rouge_l_grounding

from .amac import DEFAULT_TYPE_PRIORS, AMACBaseline
from .amem import AMEMBaseline
from .base import BaselineDecision, FeatureBaseline
from .memorybank import MemoryBankBaseline

__all__ = [
    "DEFAULT_TYPE_PRIORS",
    "TASK_FEATURES",
    "AMACBaseline",
    "AMEMBaseline",
    "BaselineDecision",
    "FeatureBaseline",
    "MemoryBankBaseline",
    "lexical_novelty",
    "recency",
    "rouge_l_grounding",
]
