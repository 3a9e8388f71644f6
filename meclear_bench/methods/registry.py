"""Method names -> method objects; ``name:preset`` selects an engine preset for ``meclear``."""

from __future__ import annotations

from collections.abc import Callable

from meclear_integrations.core import Budget, ClearanceConfig
from meclear_integrations.core.errors import ConfigurationError

from ..settings import BenchSettings
from .base import BenchMethod
from .contextcite import ContextCiteAnswersMethod, ContextCiteMethod
from .llm_direct import LlmDirectMethod, Rater
from .llm_filter import Keeper, LlmFilterMethod
from .loo import LooMethod, LooOnceMethod
from .meclear import MeClearMethod
from .newest import NewestWinsMethod
from .none import NoClearance
from .proxyspex import ProxySpexAnswersMethod, ProxySpexMethod
from .recency import with_recency
from .targets import TargetOracle

__all__ = ["METHOD_FACTORIES", "MethodFactory", "build_method", "method_names", "register_method"]

MethodFactory = Callable[[str, str | None, BenchSettings], BenchMethod]
"""(label, preset or None, settings) -> method."""


def _meclear(label: str, preset: str | None, settings: BenchSettings) -> BenchMethod:
    config = settings.engine
    if preset is not None:
        make = getattr(ClearanceConfig, "preset", None)
        if make is None:
            raise ConfigurationError(f"engine presets are not available (asked for {preset!r})")
        # The preset replaces the configuration; the run's seed and concurrency are kept.
        budget = Budget(max_concurrency=config.budget.max_concurrency)
        config = make(preset, seed=config.seed, budget=budget)
    return MeClearMethod(config, name=label)


def _meclear_no_surrogate(label: str, preset: str | None, settings: BenchSettings) -> BenchMethod:
    """``meclear-no-surrogate[:PRESET]``: ``meclear`` with the surrogate candidate source off.

    The labelled ablation of the package default's surrogate candidates: the same engine
    as ``meclear`` (or ``meclear:PRESET``) with ``Verification.surrogate = None``
    (``core.surrogate``: the Lasso candidates fitted on the coalition table); nothing else
    changes. The paper preset has them off already.
    """
    base = _meclear(label, preset, settings)
    assert isinstance(base, MeClearMethod)
    config = base.config
    off = config.verification.model_copy(update={"surrogate": None})
    return MeClearMethod(config.updated(verification=off), name=label)


def _plain(cls: Callable[[], BenchMethod]) -> MethodFactory:
    def factory(label: str, preset: str | None, settings: BenchSettings) -> BenchMethod:
        if preset is not None:
            raise ConfigurationError(f"method {label.split(':')[0]!r} takes no preset")
        method = cls()
        method.name = label
        return method

    return factory


METHOD_FACTORIES: dict[str, MethodFactory] = {
    "meclear": _meclear,
    "meclear-recency": with_recency(_meclear),
    "meclear-no-surrogate": _meclear_no_surrogate,
    "loo": _plain(LooMethod),
    "loo-once": _plain(LooOnceMethod),
    "newest": _plain(NewestWinsMethod),
    "llm-filter": _plain(LlmFilterMethod),
    "contextcite": _plain(ContextCiteMethod),
    "contextcite-answers": _plain(ContextCiteAnswersMethod),
    "proxyspex": _plain(ProxySpexMethod),
    "proxyspex-answers": _plain(ProxySpexAnswersMethod),
    "llm-direct": _plain(LlmDirectMethod),
    "none": _plain(NoClearance),
    "oracle": _plain(TargetOracle),
}


def register_method(name: str, factory: MethodFactory) -> None:
    """Add (or replace) a method under ``name``.

    Args:
        name: The name ``--methods`` and :func:`build_method` accept.
        factory: ``factory(spec, preset, settings) -> BenchMethod``.
    """
    METHOD_FACTORIES[name] = factory


def method_names() -> list[str]:
    """The names of every benchmark method, in registration order.

    Returns:
        The method names ``--methods`` accepts.
    """
    return list(METHOD_FACTORIES)


def build_method(
    spec: str,
    settings: BenchSettings,
    *,
    rater: Rater | None = None,
    keeper: Keeper | None = None,
) -> BenchMethod:
    """The method named by ``spec`` (``name`` or ``name:preset``).

    Args:
        spec: A registered method name, optionally with an engine preset
            (``meclear:paper``).
        settings: The run's settings.
        rater: The rater of the ``llm-direct`` baseline (None: that method is not run).
        keeper: The filter model of ``llm-filter`` (None: simulated, or not run with real
            task models).

    Returns:
        The method.

    Raises:
        ConfigurationError: The name is unknown, or the method takes no preset.

    Example:
        >>> from meclear_bench import BenchSettings, build_method
        >>> build_method("loo", BenchSettings()).name
        'loo'
    """
    name, _, preset = spec.partition(":")
    if name not in METHOD_FACTORIES:
        raise ConfigurationError(f"unknown method {name!r}; known: {', '.join(METHOD_FACTORIES)}")
    method = METHOD_FACTORIES[name](spec, preset or None, settings)
    if isinstance(method, LlmDirectMethod) and rater is not None:
        method.rater = rater
    if isinstance(method, LlmFilterMethod) and keeper is not None:
        method.keeper = keeper
    return method
