"""The evaluation harness: fault-injected benchmark cases, methods, metrics, reports."""

from .builtin import load_builtin_cases
from .cases import (
    BenchCase,
    CaseLineError,
    CaseMemory,
    CaseParseResult,
    dump_cases,
    load_cases,
    parse_case_lines,
)
from .locomo import LocomoBuild, LocomoDataError, build_locomo_cases
from .verify import Verification, verify_case
from .bootstrap import ClusterBootstrap
from .counting import CountingEvaluator
from .methods import BenchMethod, MethodOutput, build_method, register_method
from .metrics import metric_value, summarize
from .outcomes import CaseOutcome, score_case
from .results import build_results
from .runner import BenchRun, run_benchmark
from .settings import BenchSettings

__all__ = [
    "BenchCase",
    "BenchMethod",
    "BenchRun",
    "BenchSettings",
    "CaseOutcome",
    "ClusterBootstrap",
    "CountingEvaluator",
    "MethodOutput",
    "build_method",
    "build_results",
    "metric_value",
    "register_method",
    "run_benchmark",
    "score_case",
    "summarize",
    "CaseLineError",
    "CaseMemory",
    "CaseParseResult",
    "LocomoBuild",
    "LocomoDataError",
    "Verification",
    "build_locomo_cases",
    "dump_cases",
    "load_builtin_cases",
    "load_cases",
    "parse_case_lines",
    "verify_case",
]
