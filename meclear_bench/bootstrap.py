"""Two-level cluster bootstrap (conversations, then queries), vectorised with numpy.

One replicate draws C conversations with replacement; inside every drawn conversation it
draws that conversation's n_j queries with replacement; a drawn query brings all its
cases. The draw is represented by case weights W (R, N), so any ratio metric of
:mod:`~meclear_bench.metrics` is ``(W @ num) / (W @ den)`` per replicate.
Paired differences use per-case differences of numerators (computed before resampling)
under the same weights. Intervals are percentile intervals (the paper: 2000 replicates, 95%).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from meclear_integrations.core.errors import ConfigurationError

__all__ = ["ClusterBootstrap", "percentile_interval"]


class ClusterBootstrap:
    """Replicate case weights for cases grouped in queries grouped in clusters.

    Args:
        clusters: The cluster of each case (a LoCoMo conversation).
        queries: The query of each case.
        replicates: The number of bootstrap replicates.
        seed: The resampling seed.

    Raises:
        ConfigurationError: ``clusters`` and ``queries`` differ in length.

    Example:
        >>> import numpy as np
        >>> from meclear_bench import ClusterBootstrap
        >>> boot = ClusterBootstrap(["c1", "c1", "c2"], ["q1", "q2", "q3"], replicates=200)
        >>> lo, hi = boot.interval(np.array([1.0, 0.0, 1.0]), np.ones(3))
        >>> 0.0 <= lo <= 2 / 3 <= hi <= 1.0
        True
    """

    def __init__(
        self,
        clusters: Sequence[str],
        queries: Sequence[str],
        *,
        replicates: int = 2000,
        seed: int = 0,
    ) -> None:
        if len(clusters) != len(queries):
            raise ConfigurationError("clusters and queries must have one entry per case")
        self.n_cases = len(clusters)
        self.replicates = replicates
        rng = np.random.default_rng(seed)
        query_keys = list(dict.fromkeys(zip(clusters, queries, strict=True)))
        query_index = {key: i for i, key in enumerate(query_keys)}
        case_query = np.array(
            [query_index[key] for key in zip(clusters, queries, strict=True)], dtype=int
        )
        cluster_keys = list(dict.fromkeys(clusters))
        members: dict[str, list[int]] = {c: [] for c in cluster_keys}
        for i, (c, _) in enumerate(query_keys):
            members[c].append(i)
        query_weights = np.zeros((replicates, len(query_keys)))
        if replicates and cluster_keys:
            n_clusters = len(cluster_keys)
            cluster_draws = rng.multinomial(
                n_clusters, np.full(n_clusters, 1 / n_clusters), replicates
            )
            for j, c in enumerate(cluster_keys):
                idx = members[c]
                draws = cluster_draws[:, j] * len(idx)
                # c_j independent resamples of n_j queries = n_j * c_j uniform draws.
                query_weights[:, idx] = rng.multinomial(draws, np.full(len(idx), 1 / len(idx)))
        self.weights = query_weights[:, case_query] if self.n_cases else query_weights[:, :0]
        """(R, N) case weights of every replicate."""

    def ratio(self, numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
        """Per-replicate sum(w num) / sum(w den); NaN where a replicate's denominator is 0.

        Args:
            numerator: Per-case numerators.
            denominator: Per-case denominators.

        Returns:
            One ratio per replicate.
        """
        num = self.weights @ np.asarray(numerator, dtype=float)
        den = self.weights @ np.asarray(denominator, dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)

    def interval(
        self, numerator: np.ndarray, denominator: np.ndarray, confidence: float = 0.95
    ) -> tuple[float, float] | None:
        """Percentile interval of the ratio metric.

        Args:
            numerator: Per-case numerators.
            denominator: Per-case denominators.
            confidence: The interval's coverage.

        Returns:
            (lo, hi), or None when no replicate has a denominator.
        """
        return percentile_interval(self.ratio(numerator, denominator), confidence)


def percentile_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float] | None:
    """(lo, hi) percentiles of the finite replicate values; None when there are none.

    Args:
        values: The replicate values.
        confidence: The interval's coverage.

    Returns:
        (lo, hi), or None.
    """
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(finite, [alpha, 1 - alpha])
    return float(lo), float(hi)
