"""Where a method's expected recovery falls short of the oracle's, by what it deleted.

Reads the ``outcomes.jsonl`` of a ``meclear bench`` run that includes the method and the
``oracle`` and sorts the method's cases by outcome: clean, exact (deleted the targets),
partial (some targets, not all), superset (the targets and more), wrong memories,
nothing deleted, abstained (``unverified``). For each kind: its cases, the method's and the
oracle's mean E[recovery], and its share of the gap in percentage points over all cases.

Usage::

    python -m meclear_bench.gap OUT_DIR [--method meclear]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["gap_by_outcome", "main", "outcome_kind"]


def outcome_kind(row: dict[str, Any]) -> str:
    """The kind of one outcome (module docstring).

    Args:
        row: One line of ``outcomes.jsonl``.

    Returns:
        The kind.
    """
    targets, deleted = set(row["targets"]), set(row["cleared"])
    if not targets:
        return "clean"
    if row.get("status", "complete") != "complete":
        return "abstained"
    if deleted == targets:
        return "exact"
    if not deleted:
        return "nothing deleted"
    if targets <= deleted:
        return "superset"
    return "partial" if deleted & targets else "wrong memories"


def gap_by_outcome(rows: Iterable[dict[str, Any]], method: str = "meclear") -> list[dict[str, Any]]:
    """Per outcome kind: cases, mean E[recovery] of the method and the oracle, gap share.

    Args:
        rows: The lines of ``outcomes.jsonl``.
        method: The method compared with the oracle.

    Returns:
        One entry per kind, largest gap first.

    Raises:
        ValueError: The run lacks the method or the oracle.
    """
    by_method: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        by_method.setdefault(row["method"], {})[row["case_id"]] = row
    if method not in by_method or "oracle" not in by_method:
        raise ValueError(f"the run needs both {method!r} and 'oracle' outcomes")
    ours, oracle = by_method[method], by_method["oracle"]
    common = [cid for cid in ours if cid in oracle]
    kinds: dict[str, list[float]] = {}
    for cid in common:
        acc = kinds.setdefault(outcome_kind(ours[cid]), [0.0, 0.0, 0.0])
        acc[0] += 1
        acc[1] += ours[cid]["expected_recovery"]
        acc[2] += oracle[cid]["expected_recovery"]
    total = len(common) or 1
    out = [
        {
            "kind": kind,
            "cases": int(n),
            "method": mine / n,
            "oracle": best / n,
            "gap_pp": 100 * (best - mine) / total,
        }
        for kind, (n, mine, best) in kinds.items()
    ]
    return sorted(out, key=lambda r: -r["gap_pp"])


def main(argv: Sequence[str] | None = None) -> int:
    """Print the breakdown of a run directory's ``outcomes.jsonl``.

    Args:
        argv: The command line (None: ``sys.argv``).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(description="gap to the oracle by outcome kind")
    parser.add_argument("run", type=Path, help="a meclear bench output directory")
    parser.add_argument("--method", default="meclear")
    args = parser.parse_args(argv)
    with open(args.run / "outcomes.jsonl", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    for r in gap_by_outcome(rows, args.method):
        print(
            f"{r['kind']:16s} {r['cases']:5d} cases  {args.method} {100 * r['method']:5.1f}  "
            f"oracle {100 * r['oracle']:5.1f}  gap {r['gap_pp']:+.1f} pp"
        )
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
