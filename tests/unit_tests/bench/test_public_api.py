"""The benchmark's public surface: exact ``__all__`` lists, every concrete method exported."""

from __future__ import annotations

import inspect
import pkgutil

import meclear_bench as bench
import meclear_bench.methods as methods

EXPECTED = [
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

EXPECTED_METHODS = [
    "BenchMethod",
    "ContextCiteAnswersMethod",
    "ContextCiteMethod",
    "FILTER_PROMPT",
    "HARM_PROMPT",
    "Keeper",
    "LlmDirectMethod",
    "LlmFilterMethod",
    "LooMethod",
    "LooOnceMethod",
    "METHOD_FACTORIES",
    "MeClearMethod",
    "MeClearRecencyMethod",
    "MethodContext",
    "MethodFactory",
    "MethodNotRunError",
    "MethodOutput",
    "NewestWinsMethod",
    "NoClearance",
    "ProxySpexAnswersMethod",
    "ProxySpexMethod",
    "Rater",
    "SimulatedFilter",
    "TargetOracle",
    "build_method",
    "case_seed",
    "flag_order",
    "harm_ranking",
    "method_names",
    "newest_wins",
    "pairwise_features",
    "prompt_keeper",
    "prompt_rater",
    "register_method",
    "settle_clearance",
    "shapley_from_moebius",
    "verified_clearance",
    "with_recency",
]


def test_bench_all_is_exact() -> None:
    assert sorted(bench.__all__) == EXPECTED
    for name in bench.__all__:
        assert hasattr(bench, name), name


def test_methods_all_is_exact() -> None:
    assert sorted(methods.__all__) == EXPECTED_METHODS
    for name in methods.__all__:
        assert hasattr(methods, name), name


def test_every_concrete_method_is_exported() -> None:
    """A method class added under ``bench/methods`` without an export fails here."""
    concrete = set()
    for info in pkgutil.iter_modules(methods.__path__):
        module = __import__(f"{methods.__name__}.{info.name}", fromlist=["_"])
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, methods.BenchMethod)
                and not inspect.isabstract(obj)
                and obj.__module__ == module.__name__
            ):
                concrete.add(name)
    assert concrete, "no concrete method found"
    assert concrete <= set(methods.__all__), sorted(concrete - set(methods.__all__))


def test_bench_errors_are_package_errors_and_keep_their_builtin_base() -> None:
    from meclear_integrations.core.errors import ConfigurationError, MeClearError

    assert issubclass(bench.LocomoDataError, ConfigurationError)
    assert issubclass(bench.LocomoDataError, ValueError)
    assert issubclass(methods.MethodNotRunError, MeClearError)
    assert issubclass(methods.MethodNotRunError, RuntimeError)
