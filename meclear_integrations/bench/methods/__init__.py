"""Clearance methods compared by the benchmark, one per module."""

from .base import BenchMethod, MethodContext, MethodNotRunError, MethodOutput, case_seed
from .clearance import flag_order, harm_ranking, settle_clearance, verified_clearance
from .contextcite import ContextCiteMethod
from .llm_direct import HARM_PROMPT, LlmDirectMethod, Rater, prompt_rater
from .loo import LooMethod
from .meclear import MeClearMethod
from .none import NoClearance
from .proxyspex import ProxySpexMethod, pairwise_features, shapley_from_moebius
from .registry import METHOD_FACTORIES, MethodFactory, build_method, method_names, register_method
from .targets import TargetOracle

__all__ = [
    "HARM_PROMPT",
    "METHOD_FACTORIES",
    "BenchMethod",
    "ContextCiteMethod",
    "LlmDirectMethod",
    "LooMethod",
    "MeClearMethod",
    "MethodContext",
    "MethodFactory",
    "MethodNotRunError",
    "MethodOutput",
    "NoClearance",
    "ProxySpexMethod",
    "Rater",
    "TargetOracle",
    "build_method",
    "case_seed",
    "flag_order",
    "harm_ranking",
    "method_names",
    "pairwise_features",
    "prompt_rater",
    "register_method",
    "settle_clearance",
    "shapley_from_moebius",
    "verified_clearance",
]
