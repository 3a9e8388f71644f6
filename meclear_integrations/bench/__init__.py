"""The evaluation harness: fault-injected benchmark cases, methods, metrics, reports."""

from .cases import (
    BenchCase,
    CaseLineError,
    CaseMemory,
    CaseParseResult,
    dump_cases,
    load_cases,
    parse_case_lines,
)

__all__ = [
    "BenchCase",
    "CaseLineError",
    "CaseMemory",
    "CaseParseResult",
    "dump_cases",
    "load_cases",
    "parse_case_lines",
]
