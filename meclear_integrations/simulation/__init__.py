"""The simulated evidence world and the one offline stand-in model that reads it.

:class:`StandInModel` turns a prompt into a reply (agent answers, judge verdicts, scripted
admission replies, optional faults: :mod:`.faults`); the framework adapters and the
evaluators here are built on it. Figures produced with it are simulated, never real-model results.
"""

from .evaluator import SimulatedEvaluator
from .examples import SimulatedCase, redundant_harm_example
from .judging import JUDGE_SIGNALS, JudgeSignal, SimulatedJudge
from .query import SimulatedQuery
from .reader import TextReader
from .standin import StandInModel
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
    "StandInModel",
    "TextReader",
    "exact_match_score",
    "normalize_answer",
    "redundant_harm_example",
]
