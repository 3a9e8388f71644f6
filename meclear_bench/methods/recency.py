"""``meclear-recency``: the engine with the recency candidate (``core.recency``) tried first.

The same engine and settings as ``meclear`` (the dev-tuned configuration, or
``meclear-recency:PRESET``), plus ``recency=RecencyPrior(key="date",
min_similarity=RECENCY_SIMILARITY)``: the older of similar dated memories are one candidate,
verified like any other before attribution; a wrong newest memory fails that verification
and is attributed as usual. It reads only what a deployment has (the memories' texts and
their ``date`` metadata), never the case's labels. ``RECENCY_SIMILARITY`` was chosen on the
CLARK-News dev split (``meclear_bench.clark_news``; module docstring of
``meclear_bench.clark_report``).
"""

from __future__ import annotations

from meclear_integrations.core.recency import RecencyPrior

from ..settings import BenchSettings
from .base import BenchMethod
from .meclear import MeClearMethod

__all__ = ["RECENCY_RATE", "RECENCY_SHRINK", "RECENCY_SIMILARITY", "meclear_recency"]

RECENCY_SIMILARITY = 0.3
"""The similarity from which two dated memories are compared (chosen on CLARK-News dev)."""
RECENCY_RATE: float | None = None
"""The recency candidate's pass rate (None: the run's, 0.3). 0.5 (the early exit's bar) was
measured on CLARK-News dev: the same expected recovery (noisy 85.4 / 84.8 stale / wrong
corrections; persistent 77.7 / 77.0) at more calls (57.0 -> 61.9 per case noisy, 24.9 ->
26.6 persistent), so the run's rate is kept."""
RECENCY_SHRINK = False
"""Off: putting each member of a verified C_r back in turn (``RecencyPrior.shrink``) cuts
deleted background on CLARK-News dev (noisy 0.131 -> 0.062 per case, deterministic 0.066 ->
0) but under noise a put-back stale copy verifies by chance: stale facts 85.4 -> 78.3
(persistent 77.7 -> 72.4) at more calls (25.0 -> 39.1 per stale case, noisy)."""


def meclear_recency(label: str, preset: str | None, settings: BenchSettings) -> BenchMethod:
    """The ``meclear`` method (or preset) with the recency candidate on.

    Args:
        label: The method's name in results.
        preset: An engine preset, or None for the run's (dev-tuned) configuration.
        settings: The run's settings.

    Returns:
        The method.
    """
    from .registry import METHOD_FACTORIES  # the plain method, built the same way

    base = METHOD_FACTORIES["meclear"](label, preset, settings)
    assert isinstance(base, MeClearMethod)
    prior = RecencyPrior(
        min_similarity=RECENCY_SIMILARITY, shrink=RECENCY_SHRINK, recovery_rate=RECENCY_RATE
    )
    return MeClearMethod(base.config.updated(recency=prior), name=label)
