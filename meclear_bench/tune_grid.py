"""One tuning grid for every method: axes, edge widening and the coordinate search.

Every method is tuned the same way (:func:`search`): its settings are named axes, each an
ordered tuple of values, gathered in groups (the method's own knobs; its verification
settings, recovery rate and trial cap, when it verifies; for MeClear also its optional
parts). Starting from the method's current settings, each group in turn is searched as the
full product of its axes with the other groups held; the best admissible point
(:func:`choose`) is kept. A numeric axis whose chosen value sits at an edge of its grid
is widened one step past that edge (up to its bound): the new value is evaluated with the
group's other axes at their choice, and the choice is made again over every point of the
group, until it is inside the grid or at the bound (at most ``max_widenings`` steps per
axis). The passes over the groups repeat until no
choice changes (at most ``passes``). Every point is evaluated once (results are cached by
its settings).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any

__all__ = ["Axis", "Point", "SearchResult", "choose", "nested", "search"]


@dataclass(frozen=True)
class Axis:
    """One tunable setting and the values searched.

    Attributes:
        name: The setting's key (a dotted key such as ``verification.max_trials`` names a
            nested setting).
        values: The values searched, in increasing order for a numeric axis.
        low: The smallest value the setting takes (None: categorical, never widened).
        high: The largest value the setting takes.
        scale: ``linear`` (widen by the last step) or ``log`` (by the last ratio).
        integer: Round widened values to integers.
    """

    name: str
    values: tuple[Any, ...]
    low: float | None = None
    high: float | None = None
    scale: str = "linear"
    integer: bool = False

    def widened(self, value: Any) -> Axis | None:
        """The axis with one more value past the edge ``value`` sits at (None: cannot).

        Args:
            value: The chosen value.

        Returns:
            The widened axis, or None when ``value`` is inside the grid, the axis is
            categorical, or the edge is the setting's bound.
        """
        if self.low is None or self.high is None or len(self.values) < 2:
            return None
        vals = list(self.values)
        if value == vals[-1] and value < self.high:
            nxt = self._step(vals[-2], vals[-1])
            nxt = min(nxt, self.high)
            return None if nxt <= vals[-1] else Axis(**{**self.__dict__, "values": (*vals, nxt)})
        if value == vals[0] and value > self.low:
            nxt = self._step(vals[1], vals[0])
            nxt = max(nxt, self.low)
            return None if nxt >= vals[0] else Axis(**{**self.__dict__, "values": (nxt, *vals)})
        return None

    def _step(self, inner: float, edge: float) -> float | int:
        if self.scale == "log" and inner > 0 and edge > 0:
            out = edge * (edge / inner)
        else:
            out = edge + (edge - inner)
        if self.integer:
            return round(out)
        return float(f"{out:.6g}")


@dataclass
class Point:
    """One evaluated setting: its figures per setting and its score."""

    values: dict[str, Any]
    """The axes' values."""
    points: dict[str, dict[str, Any]]
    """Standard setting -> the run's headline figures."""
    admissible: bool
    """Deleted background within the bound in every setting."""
    objective: float
    """The mean of the objective metric over the settings."""
    model_calls: float
    """The mean model calls per case over the settings."""
    background: float = 0.0
    """The most deleted background memories per case over the settings."""


@dataclass
class SearchResult:
    """Every point a search evaluated, in order, and the chosen one."""

    rows: list[Point] = field(default_factory=list)
    """The evaluated points."""
    chosen: int = 0
    """Index of the chosen point in ``rows``."""
    axes: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    """Each axis's final values (after widening)."""
    widened: list[str] = field(default_factory=list)
    """What was widened (``axis: value``), in order."""


def choose(rows: Sequence[Point]) -> int:
    """Index of the best admissible row (ties within 0.1 pp: fewer model calls).

    When no row is admissible, the rows deleting the least background (within 0.005 per
    case) compete instead, so the search moves towards the bound rather than ignoring it.

    Args:
        rows: The candidates.

    Returns:
        The index.
    """
    admissible = [i for i, r in enumerate(rows) if r.admissible]
    if not admissible:
        least = min(r.background for r in rows)
        admissible = [i for i, r in enumerate(rows) if r.background <= least + 0.005]
    best = max(rows[i].objective for i in admissible)
    near = [i for i in admissible if rows[i].objective >= best - 0.001]
    return min(near, key=lambda i: (rows[i].model_calls, i))


def _key(values: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in values.items()))


def search(
    start: dict[str, Any],
    groups: Sequence[Sequence[Axis]],
    evaluate: Callable[[dict[str, Any]], Point],
    *,
    passes: int = 2,
    max_widenings: int = 4,
) -> SearchResult:
    """Coordinate search over ``groups`` from ``start`` (module docstring).

    Args:
        start: The starting value of every axis.
        groups: The axes, searched group by group (product within a group).
        evaluate: Scores one full assignment of the axes.
        passes: The most passes over the groups.
        max_widenings: The most times one axis is widened.

    Returns:
        Every evaluated point and the choice.
    """
    result = SearchResult()
    cache: dict[tuple[tuple[str, str], ...], int] = {}
    current = dict(start)
    axes_now = [list(group) for group in groups]
    widen_count: dict[str, int] = {}

    def point(values: dict[str, Any]) -> int:
        key = _key(values)
        if key not in cache:
            result.rows.append(evaluate(dict(values)))
            cache[key] = len(result.rows) - 1
        return cache[key]

    for _ in range(max(1, passes)):
        before = dict(current)
        for g, group in enumerate(axes_now):
            names = [a.name for a in group]
            indices = [
                point({**current, **dict(zip(names, combo, strict=True))})
                for combo in product(*(a.values for a in group))
            ]
            current = dict(result.rows[indices[choose([result.rows[i] for i in indices])]].values)
            grown = True
            while grown:
                grown = False
                for j, axis in enumerate(axes_now[g]):
                    wider = axis.widened(current[axis.name])
                    if wider is None or widen_count.get(axis.name, 0) >= max_widenings:
                        continue
                    widen_count[axis.name] = widen_count.get(axis.name, 0) + 1
                    new = [v for v in wider.values if v not in axis.values]
                    result.widened.append(f"{axis.name}: {new}")
                    axes_now[g][j] = wider
                    indices += [point({**current, axis.name: v}) for v in new]
                    best = indices[choose([result.rows[i] for i in indices])]
                    current = dict(result.rows[best].values)
                    grown = True
        if current == before:
            break
    result.chosen = point(current)
    result.axes = {a.name: a.values for group in axes_now for a in group}
    return result


def nested(values: dict[str, Any]) -> dict[str, Any]:
    """Dotted keys as nested mappings (``verification.max_trials`` -> ``verification``).

    Args:
        values: Flat settings.

    Returns:
        The nested settings.
    """
    out: dict[str, Any] = {}
    for key, value in values.items():
        head, dot, tail = key.partition(".")
        if dot:
            out.setdefault(head, {})[tail] = value
        else:
            out[key] = value
    return out
