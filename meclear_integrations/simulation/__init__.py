"""The simulated evidence world: an offline, documented stand-in for an LLM task agent.

Figures produced with it are simulated, never real-model results.
"""

from .evaluator import SimulatedEvaluator, TextReader
from .examples import SimulatedCase, redundant_harm_example
from .judging import JUDGE_SIGNALS, JudgeSignal, SimulatedJudge
from .query import SimulatedQuery
from .replies import simulated_reply
from .world import Claim, EvidenceWorld, exact_match_score, normalize_answer

__all__ = [
    "JUDGE_SIGNALS",
    "Claim",
    "EvidenceWorld",
    "JudgeSignal",
    "SimulatedCase",
    "SimulatedEvaluator",
    "SimulatedJudge",
    "SimulatedQuery",
    "TextReader",
    "exact_match_score",
    "normalize_answer",
    "redundant_harm_example",
    "simulated_reply",
]
