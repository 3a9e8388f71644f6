"""The order the suite's tests are dealt to xdist workers (see tests/conftest.py)."""

from __future__ import annotations

from typing import Protocol, TypeVar


class _Node(Protocol):
    nodeid: str


Item = TypeVar("Item", bound=_Node)


def spread_waiting_modules(items: list[Item]) -> list[Item]:
    """Deal the integration tier's modules evenly among the unit tests (order kept within each).

    xdist's worksteal hands each worker a contiguous slice of the collection; with the
    integration tier first, one worker would hold every wait. Spread out, each slice mixes
    waiting tests with CPU-bound ones and the waits overlap other workers' work. Every worker
    computes the same order (it depends on the collection only).
    """
    waiting: dict[str, list[Item]] = {}
    quick: list[Item] = []
    for item in items:
        if item.nodeid.startswith("tests/integration_tests/"):
            waiting.setdefault(item.nodeid.split("::")[0], []).append(item)
        else:
            quick.append(item)
    if not waiting or not quick:
        return items
    blocks = list(waiting.values())
    out: list[Item] = []
    step = len(quick) / len(blocks)
    for i, block in enumerate(blocks):
        out.extend(quick[round(i * step) : round((i + 1) * step)])
        out.extend(block)
    return out
