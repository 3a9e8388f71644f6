"""A deterministic subset of admission cases (``--limit``) and a stratified running order.

The subset is stratified by label; every prefix of the running order mixes the groups in
proportion, so a run stopped early has measured a stratified sample.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from meclear_integrations.core.errors import ConfigurationError

__all__ = ["LabelledCase", "interleaved", "stratified_subset"]


class LabelledCase(Protocol):
    """What the subset reads of a case."""

    @property
    def id(self) -> str: ...  # noqa: D102

    @property
    def label(self) -> str: ...  # noqa: D102

    @property
    def reason_type(self) -> str: ...  # noqa: D102


C = TypeVar("C", bound=LabelledCase)


def _largest_remainder(sizes: dict[str, int], total: int) -> dict[str, int]:
    """Split ``total`` over the groups in proportion to ``sizes``, at least one each."""
    n = sum(sizes.values())
    floor = {g: max(1, total * s // n) for g, s in sizes.items()}
    while sum(floor.values()) > total:  # the minimum of one per group overshot
        g = min(floor, key=lambda k: (floor[k] == 0, -floor[k], k))
        floor[g] -= 1
    rest = sorted(sizes, key=lambda g: (-(total * sizes[g] / n - floor[g]), g))
    for g in rest[: total - sum(floor.values())]:
        floor[g] += 1
    return {g: min(k, sizes[g]) for g, k in floor.items()}


def _spread(items: list[C], k: int) -> list[C]:
    """``k`` items evenly spaced over ``items`` (the first always among them)."""
    if k <= 0:
        return []
    if k >= len(items):
        return list(items)
    step = len(items) / k
    return [items[int(i * step)] for i in range(k)]


def stratified_subset(cases: Sequence[C], limit: int | None) -> list[C]:
    """At most ``limit`` cases, shared among the labels in proportion, every label kept.

    Each label gets its share of ``limit`` (largest remainders, at least one case per label
    when ``limit`` allows), and inside a label the cases are taken evenly spaced over the
    label's cases ordered by reason type, so the reasons are spread too. Nothing is random:
    the same file and limit give the same subset, in the file's order.

    Args:
        cases: The labelled cases.
        limit: How many to keep (None, or at least the number of cases: all of them).

    Returns:
        The subset, in the original order.

    Raises:
        ConfigurationError: ``limit`` is below 1.
    """
    if limit is None or limit >= len(cases):
        return list(cases)
    if limit < 1:
        raise ConfigurationError(f"--limit must be at least 1 (got {limit})")
    by_label: dict[str, list[C]] = defaultdict(list)
    for c in cases:
        by_label[c.label].append(c)
    shares = _largest_remainder({g: len(v) for g, v in by_label.items()}, limit)
    keep: set[str] = set()
    for label, group in by_label.items():
        ordered = sorted(group, key=lambda c: c.reason_type)  # stable: file order inside a reason
        keep.update(c.id for c in _spread(ordered, shares[label]))
    return [c for c in cases if c.id in keep]


def interleaved(cases: Sequence[C], key: Callable[[C], str]) -> list[C]:
    """The cases in a running order whose every prefix mixes the groups in proportion.

    Each case sits at its relative position inside its group (``(i + 0.5) / n``) and the
    cases are run in that order (ties in the groups' order of first appearance), so a run
    stopped after any number of cases has decided a near-proportional share of every group
    (label, or candidate kind) and, inside a group, cases spread over the file.

    Args:
        cases: The cases.
        key: The group of a case.

    Returns:
        The same cases, reordered.
    """
    groups: dict[str, list[C]] = defaultdict(list)
    for c in cases:
        groups[key(c)].append(c)
    rank = {g: r for r, g in enumerate(groups)}
    placed = [
        ((i + 0.5) / len(members), rank[g], c)
        for g, members in groups.items()
        for i, c in enumerate(members)
    ]
    return [c for _, _, c in sorted(placed, key=lambda t: (t[0], t[1]))]
