"""Clearance methods compared by the benchmark, one per module."""

from .base import BenchMethod, MethodContext, MethodNotRunError, MethodOutput, case_seed
from .contextcite import ContextCiteAnswersMethod, ContextCiteMethod
from .deletions import flag_order, harm_ranking, settle_clearance, verified_clearance
from .llm_direct import HARM_PROMPT, LlmDirectMethod, Rater, prompt_rater
from .llm_filter import FILTER_PROMPT, Keeper, LlmFilterMethod, SimulatedFilter, prompt_keeper
from .loo import LooMethod, LooOnceMethod
from .meclear import MeClearMethod
from .newest import NewestWinsMethod, newest_wins
from .none import NoClearance
from .proxyspex import (
    ProxySpexAnswersMethod,
    ProxySpexMethod,
    pairwise_features,
    shapley_from_moebius,
)
from .recency import MeClearRecencyMethod, with_recency
from .registry import METHOD_FACTORIES, MethodFactory, build_method, method_names, register_method
from .targets import TargetOracle

__all__ = [
    "FILTER_PROMPT",
    "HARM_PROMPT",
    "METHOD_FACTORIES",
    "BenchMethod",
    "ContextCiteAnswersMethod",
    "ContextCiteMethod",
    "Keeper",
    "LlmDirectMethod",
    "LlmFilterMethod",
    "LooMethod",
    "LooOnceMethod",
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
