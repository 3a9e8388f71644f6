"""The evaluation harness: fault-injected benchmark cases, methods, metrics, reports."""

from .bootstrap import ClusterBootstrap
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
from .counting import CountingEvaluator
from .locomo import LocomoBuild, LocomoDataError, build_locomo_cases
from .methods import BenchMethod, MethodOutput, build_method, register_method
from .metrics import metric_value, summarize
from .outcomes import CaseOutcome, score_case
from .results import build_results
from .runner import BenchRun, run_benchmark
from .settings import BenchSettings
from .verify import Verification, verify_case

__all__ = [
    "BenchCase",
    "BenchMethod",
    "BenchRun",
    "BenchSettings",
    "CaseLineError",
    "CaseMemory",
    "CaseOutcome",
    "CaseParseResult",
    "ClusterBootstrap",
    "CountingEvaluator",
    "LocomoBuild",
    "LocomoDataError",
    "MethodOutput",
    "Verification",
    "build_locomo_cases",
    "build_method",
    "build_results",
    "dump_cases",
    "load_builtin_cases",
    "load_cases",
    "metric_value",
    "parse_case_lines",
    "register_method",
    "run_benchmark",
    "score_case",
    "summarize",
    "verify_case",
]
